"""benchmarks/gpu/l2_warm_probe.py end to end on the CPU (its loops and output; the timing is the GPU's)."""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("l2_warm_probe", ROOT / "benchmarks" / "gpu" / "l2_warm_probe.py")
probe = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(probe)


def test_every_op_at_every_size_cold_and_warm(tmp_path):
    probe.main(["--out", str(tmp_path / "l2.json"), "--device", "cpu", "--reps", "2", "--sizes", "1,2"])
    result = json.loads((tmp_path / "l2.json").read_text())
    ops = [(r["op"], r["input_mib"]) for r in result["rows"]]
    names = ["relu", "mul", "pow", "add_", "sum", "layer_norm", "conv3x3_bf16_channels_last"]
    assert ops == [(n, mb) for n in names for mb in (1, 2)]
    assert all(r["cold_us"] > 0 and r["warm_us"] > 0 and r["warm_over_cold"] == r["warm_us"] / r["cold_us"]
               for r in result["rows"])
    assert result["env"]["device"] == "cpu"
