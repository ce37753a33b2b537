"""benchmarks/gpu/grouped_mm_probe.py end to end on the CPU (its calls and output; the timing is the GPU's)."""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("grouped_mm_probe", ROOT / "benchmarks" / "gpu" / "grouped_mm_probe.py")
probe = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(probe)


def test_each_layer_times_three_grouped_calls_against_their_bmm(tmp_path):
    probe.main(["--out", str(tmp_path / "g.json"), "--device", "cpu", "--reps", "1", "--rounds", "1",
                "--grid", "64,4,32,48;128,8,16,16"])
    result = json.loads((tmp_path / "g.json").read_text())
    assert [(r["rows"], r["call"]) for r in result["rows"]] == [
        (64, "forward"), (64, "input_grad"), (64, "weight_grad"), (128, "forward"), (128, "input_grad"), (128, "weight_grad")]
    assert all(r["grouped_us"] > 0 and r["bmm_us"] > 0 for r in result["rows"])
    assert result["env"]["device"] == "cpu"


def test_the_grouped_and_batched_calls_compute_the_same_products():
    import torch

    for name, grouped, bmm in probe.calls(64, 4, 32, 48, "cpu", torch.float32):
        g, b = grouped(), bmm()
        if name == "weight_grad":
            assert tuple(g.shape) == tuple(b.shape) == (4, 32, 48)
        else:
            b = b.reshape(g.shape)
        assert torch.allclose(g, b, atol=1e-3), name


def test_summarize_prints_the_ratio_range_median_and_summed_ratio(tmp_path):
    rows = [{"grouped_us": g, "bmm_us": b, "grouped_over_bmm": g / b} for g, b in ((3.0, 2.0), (10.0, 10.0), (4.0, 5.0))]
    (tmp_path / "g.json").write_text(json.dumps({"env": {}, "rows": rows}))
    assert probe.summary(str(tmp_path / "g.json")) == "3 calls: grouped / bmm 0.80-1.50, median 1.00; summed times 1.00"
