"""Training frameworks' own loops under `maya emulate`: PyTorch Lightning and Hugging Face PEFT (the
Hugging Face Trainer: test_safetensors_files.py; accelerate on several ranks: tests/world)."""

import json
import subprocess
import sys
from pathlib import Path

SCRIPTS = Path(__file__).parent / "scripts"


def _emulate(tmp_path, script: str, *args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "maya", "emulate", "--json", str(tmp_path / "s.json"), "--trace-dir",
         str(tmp_path / "t"), str(SCRIPTS / script), *args],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((tmp_path / "s.json").read_text())


def test_lightning_fit_with_its_checkpoint(tmp_path):
    summary = _emulate(tmp_path, "lightning_fit.py", str(tmp_path / "root"))
    assert len(summary["iterations"]) == 5 and all(it["time_ms"] > 0 for it in summary["iterations"])
    assert list((tmp_path / "root").rglob("*.ckpt"))


def test_peft_lora_with_gradient_checkpointing_and_a_saved_adapter(tmp_path):
    summary = _emulate(tmp_path, "peft_lora.py", str(tmp_path / "adapter"))
    assert len(summary["iterations"]) == 3 and not summary["oom"]
    assert (tmp_path / "adapter" / "adapter_model.safetensors").stat().st_size > 0
