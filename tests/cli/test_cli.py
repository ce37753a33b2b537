"""Every `maya` subcommand answers --help; `maya emulate` exits with the script's status."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


def _maya(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "maya", *args], capture_output=True, text=True, cwd=ROOT, timeout=300)


@pytest.mark.parametrize("command", ["emulate", "profile", "fit"])
def test_subcommand_help(command):
    r = _maya(command, "--help")
    assert r.returncode == 0, r.stderr
    assert "usage:" in r.stdout and command in r.stdout


def test_top_level_help_lists_subcommands():
    r = _maya("--help")
    assert r.returncode == 0 and all(c in r.stdout for c in ("emulate", "profile", "fit"))


def test_emulate_missing_script_exits_2_with_message():
    r = _maya("emulate", "no/such/script.py")
    assert r.returncode == 2 and "training script not found" in r.stderr


def test_emulate_failing_script_exits_nonzero_with_rank_and_traceback():
    r = _maya("emulate", "tests/emulator/scripts/fails.py")
    assert r.returncode == 1
    assert "[rank 0]" in r.stderr and "the user's own bug" in r.stderr


def test_emulate_writes_summary_json(tmp_path):
    out = tmp_path / "s.json"
    r = _maya("emulate", "--json", str(out), "--trace-dir", str(tmp_path / "t"), "examples/train_gpt.py",
              "--steps", "2", "--batch", "2", "--seq", "64", "--dim", "64", "--layers", "2", "--heads", "4", "--vocab", "512")
    assert r.returncode == 0, r.stderr
    import json

    s = json.loads(out.read_text())
    assert s["world_size"] == 1 and s["oom"] is False and len(s["iterations"]) == 2
    assert all(it["time_ms"] > 0 for it in s["iterations"])
    assert (tmp_path / "t" / "timeline.json").exists()
