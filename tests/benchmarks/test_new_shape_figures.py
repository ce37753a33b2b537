"""benchmarks/new_shape_figures.py: the shipped new-shape host figures are what the committed H200 probes give."""

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))  # it imports moe_shape_transient from there
_spec = importlib.util.spec_from_file_location("new_shape_figures", ROOT / "benchmarks" / "new_shape_figures.py")
figures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(figures)


def test_shipped_figures_are_the_committed_probes_figures():
    probe = json.loads((figures.SESSION / "s34" / "new_shape_host.json").read_text())
    runs = [r for d in ("s34", "s34c") for r in json.loads((figures.SESSION / d / "moe_fixed_shapes.json").read_text())["runs"]]
    backward_probe = json.loads(figures.BACKWARD_PROBE.read_text())
    shipped = json.loads(figures.HOST_FILE.read_text())
    assert shipped["new_shape_us"] == figures.new_shape_us(probe, backward_probe)
    assert shipped["data_dependent_new_share"] == figures.new_share(runs)
    # A bfloat16 GEMM's lookup costs far more than a float32 one's, a cuDNN attention plan most of all.
    us = shipped["new_shape_us"]
    assert us["gemm_float32"] < us["gemm_k"] < us["gemm"] < us["conv"] < us["cudnn_attention"]
    # A backward builds its own plans (data and weight gradients for a convolution).
    assert us["conv_backward"] > us["conv"] and us["cudnn_attention_backward"] > 0


def test_new_sizes_count_each_size_once_over_the_process():
    from moe_shape_transient import new_sizes_per_step

    # Step 1 meets 3 and 5 (3 twice: new once), step 2 meets 5 again and 7, step 3 nothing new.
    assert new_sizes_per_step([3, 5, 3, 5, 7, 7, 3, 5, 7], 3) == [2, 1, 0]
