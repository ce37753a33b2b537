"""benchmarks/attention_host_extra.py: a cuDNN attention call's host time beyond a one-launch op."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))  # it imports kernel_attribution from there
_spec = importlib.util.spec_from_file_location("attention_host_extra", ROOT / "benchmarks" / "attention_host_extra.py")
extra = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(extra)


def _op(name, ts, dur, tid):
    return {"ph": "X", "cat": "cpu_op", "name": name, "ts": ts, "dur": dur, "tid": tid}


def test_extra_is_the_profiled_excess_over_one_launch_ops_scaled_to_unprofiled_time():
    events = [
        # Forward thread: top-level adds (20 us profiled) and attention calls whose cuDNN op takes 100 us
        # inside the public sdpa call; an add nested in another aten op is not a reference.
        _op("aten::add", 0, 20, 1), _op("aten::add", 30, 20, 1),
        _op("aten::scaled_dot_product_attention", 100, 130, 1),
        _op("aten::_scaled_dot_product_cudnn_attention", 105, 100, 1),
        _op("aten::layer_norm", 300, 100, 1), _op("aten::add", 310, 40, 1), _op("aten::add", 355, 40, 1),
        # Autograd engine thread: activation gradients (10 us) and the attention backward (60 us), under
        # the engine's and the node's ranges.
        _op("autograd::engine::evaluate_function: GeluBackward0", 1000, 30, 2),
        _op("GeluBackward0", 1001, 20, 2), _op("aten::gelu_backward", 1002, 10, 2),
        _op("autograd::engine::evaluate_function: ScaledDotProductCudnnAttentionBackward0", 1100, 90, 2),
        _op("ScaledDotProductCudnnAttentionBackward0", 1101, 80, 2),
        _op("aten::_scaled_dot_product_cudnn_attention_backward", 1102, 60, 2),
    ]
    got = extra.trace_extras(events, aten_op_us=10.0)
    # (100 - 20) us profiled at 10 / 20 unprofiled per profiled us; backward (60 - 10) * 10 / 10.
    assert got == pytest.approx({"forward": 40.0, "backward": 50.0})


def test_a_trace_without_cudnn_attention_has_no_extra():
    assert extra.trace_extras([_op("aten::add", 0, 20, 1)], aten_op_us=10.0) == {}


def test_the_shipped_figures_are_the_committed_traces_medians(capsys):
    extra.main([])
    out = capsys.readouterr().out
    shipped = json.loads((ROOT / "maya" / "estimator" / "data" / "h200" / "host_overhead.json").read_text())["attention_extra_us"]
    assert "median over traces: " + ", ".join(f"{op} {us}" for op, us in shipped.items()) in out
