"""benchmarks/calibrate.py's fit of the family factors and the profiles' event overhead, on made-up pairs."""

import importlib.util
import sys
from pathlib import Path

import pytest

CALIBRATE_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "calibrate.py"
_spec = importlib.util.spec_from_file_location("benchmarks_calibrate", CALIBRATE_PATH)
calibrate = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = calibrate
_spec.loader.exec_module(calibrate)


def pair(workload, family, calls, per_call_estimate_us, factor, overhead):
    """A (workload, op, measured, estimated, family, calls) pair whose truth is factor * estimate - overhead."""
    measured = (factor * per_call_estimate_us - overhead) * calls
    return (workload, "aten::op", measured, per_call_estimate_us * calls, family, calls)


def test_the_overhead_that_explains_small_and_large_ops_together_is_found():
    # Small ops (4 us estimated) run at 0.8-1 us, large ones at about 0.95x: no factor alone fits both.
    used = [pair("a", "gemm", 100, 4.2, 0.95, 3.0), pair("a", "gemm", 10, 500.0, 0.95, 3.0),
            pair("b", "gemm", 10, 4.2, 0.95, 3.0), pair("b", "gemm", 50, 800.0, 0.95, 3.0),
            pair("b", "elementwise", 300, 3.8, 1.05, 3.0)]
    fits = [calibrate._fit(used, overhead / 10, 0.8) for overhead in range(51)]
    overhead, scales, error, per_workload = min(fits, key=lambda fit: fit[2])
    assert overhead == pytest.approx(3.0)
    assert scales == {"elementwise": pytest.approx(1.05), "gemm": pytest.approx(0.95)}
    assert error < 1e-3 and fits[0][2] > 0.03  # without the overhead, a workload's kernel time is 3% off on average
    assert per_workload == {"a": pytest.approx(0.0, abs=1e-3), "b": pytest.approx(0.0, abs=1e-3)}
    # Without the overhead the factors still match each family's total, so one workload comes out slow
    # and the other fast; the error printed is the mean of their absolute values.
    signed = fits[0][3]
    assert signed["a"] * signed["b"] < 0 and fits[0][2] == pytest.approx((abs(signed["a"]) + abs(signed["b"])) / 2)


def test_the_floor_bounds_tiny_ops():
    used = [("a", "aten::op", 100.0, 100.0, "elementwise", 100)]  # 1 us each, measured 1 us
    _, scales, error, _ = calibrate._fit(used, 3.0, 0.8)
    assert scales == {"elementwise": 4.0} and error == pytest.approx(0.0)
    _, _, error, _ = calibrate._fit(used, 5.0, 0.8)  # 6 * 1 - 5 = 1: still exact
    assert error == pytest.approx(0.0)


def test_kernel_overlap_counts_kernels_on_parallel_streams_once(tmp_path):
    # A profiler Chrome trace: an RNN whose two layers' kernels overlap on two streams, and a GEMM
    # whose two kernels run one after the other on one stream.
    import gzip
    import json

    def cpu_op(name, ext):
        return {"cat": "cpu_op", "name": name, "ts": 0, "dur": 100, "args": {"External id": ext}}

    def kernel(ext, ts, dur, stream):
        return {"cat": "kernel", "name": "k", "ts": ts, "dur": dur, "args": {"External id": ext, "stream": stream}}

    events = [cpu_op("aten::_cudnn_rnn", 1), cpu_op("aten::mm", 2),
              kernel(1, 0, 10, 21), kernel(1, 5, 10, 22), kernel(1, 15, 10, 21), kernel(1, 20, 10, 22),
              kernel(2, 40, 10, 7), kernel(2, 50, 10, 7), kernel(99, 0, 10, 7)]  # 99: no op, ignored
    path = tmp_path / "w.trace.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": events}, f)
    ratio = calibrate.kernel_overlap(path)
    assert ratio == {"aten::_cudnn_rnn": pytest.approx(30 / 40), "aten::mm": pytest.approx(1.0)}


def test_trace_ops_are_summed_under_the_profiler_key_they_launch_through():
    # The H200's aten::copy_ time covers _to_copy, clone and contiguous; an embedding backward's own
    # time leaves out its zero fill, charged to aten::fill_, so it is not paired.
    import pandas as pd

    sys.path.insert(0, str(CALIBRATE_PATH.parent))
    ops = pd.DataFrame({"op": ["aten::_to_copy", "aten::_to_copy", "aten::clone", "aten::mm",
                               "aten::embedding_dense_backward"],
                        "duration_us": [10.0, 20.0, 30.0, 100.0, 50.0]})
    per_op = {"aten::copy_": {"count": 3, "self_device_us": 54.0}, "aten::mm": {"count": 1, "self_device_us": 90.0},
              "aten::embedding_dense_backward": {"count": 1, "self_device_us": 20.0},
              "aten::fill_": {"count": 1, "self_device_us": 25.0}}
    pairs = calibrate.pair_ops("w", ops, per_op, {"aten::mm": 0.5}, {"aten::embedding_dense_backward"})
    assert sorted(pairs) == [("w", "aten::copy_", 54.0, 60.0, "copy", 3), ("w", "aten::mm", 45.0, 100.0, "gemm", 1)]
    # Call counts that disagree by more than 10% are not paired.
    assert calibrate.pair_ops("w", ops.iloc[:2], per_op, {}, set()) == []
