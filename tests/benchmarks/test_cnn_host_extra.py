"""benchmarks/cnn_host_extra.py: a CNN layer's convolution and batch norm host time beyond a one-launch op."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))  # where it and its imports live
import cnn_host_extra as extra  # noqa: E402


def _op(name, ts, dur, tid):
    return {"ph": "X", "cat": "cpu_op", "name": name, "ts": ts, "dur": dur, "tid": tid}


def test_each_call_is_its_profiled_excess_over_one_launch_ops_scaled_to_unprofiled_time():
    events = [
        # Forward thread: top-level relus (20 us profiled); autocast's conv2d encloses the weight cast
        # and the convolution (60 and 100 us), whose own time is what is charged; a batch norm of 80 us.
        _op("aten::relu", 0, 20, 1), _op("aten::relu", 30, 20, 1),
        _op("aten::conv2d", 100, 200, 1), _op("aten::to", 101, 30, 1), _op("aten::convolution", 140, 60, 1),
        _op("aten::conv2d", 400, 200, 1), _op("aten::convolution", 410, 100, 1),
        _op("aten::batch_norm", 700, 80, 1), _op("aten::native_batch_norm", 705, 70, 1),
        # Autograd engine thread: relu gradients (10 us) and the layer's backward ops.
        _op("autograd::engine::evaluate_function: ReluBackward0", 1000, 30, 2),
        _op("ReluBackward0", 1001, 20, 2), _op("aten::threshold_backward", 1002, 10, 2),
        _op("ConvolutionBackward0", 1100, 90, 2), _op("aten::convolution_backward", 1101, 50, 2),
        _op("NativeBatchNormBackward0", 1300, 90, 2), _op("aten::native_batch_norm_backward", 1301, 30, 2),
    ]
    got = extra.trace_calls(events, aten_op_us=10.0)
    # Forward: (call - 20) * 10 / 20; backward: (call - 10) * 10 / 10.
    assert got == {"conv_forward_extra_us": pytest.approx([20.0, 40.0]), "batch_norm_forward_extra_us": pytest.approx([30.0]),
                   "conv_backward_extra_us": pytest.approx([40.0]), "batch_norm_backward_extra_us": pytest.approx([20.0])}


def test_a_trace_without_a_one_launch_reference_measures_nothing():
    assert extra.trace_calls([_op("aten::convolution", 0, 50, 1)], aten_op_us=10.0) == {}


def test_the_shipped_figures_are_what_the_committed_traces_give(capsys):
    extra.main([])
    out = capsys.readouterr().out
    shipped = json.loads(extra.HOST_FILE.read_text())["per_op_us"]
    line = next(x for x in out.splitlines() if x.startswith("median over every call"))
    for key in extra.FIGURES:
        assert f"{key} {shipped[key]} (" in line


def test_write_stores_the_medians_and_replaces_the_note_on_them(tmp_path, monkeypatch, capsys):
    shipped = json.loads(extra.HOST_FILE.read_text())
    copy = tmp_path / "host_overhead.json"
    stale = {**shipped, "per_op_us": {**shipped["per_op_us"], **dict.fromkeys(extra.FIGURES, 1.0)},
             "notes": shipped["notes"] + " " + ", ".join(list(extra.FIGURES)[:-1]) + " and " + list(extra.FIGURES)[-1]
             + " came from somewhere else."}
    copy.write_text(json.dumps(stale))
    monkeypatch.setattr(extra, "HOST_FILE", copy)
    monkeypatch.setattr(sys.modules["attention_host_extra"], "HOST_FILE", copy)
    extra.main(["--write"])
    written = json.loads(copy.read_text())
    assert {k: written["per_op_us"][k] for k in extra.FIGURES} == {k: shipped["per_op_us"][k] for k in extra.FIGURES}
    assert "somewhere else" not in written["notes"] and written["notes"].count("cnn_host_extra.py --write") == 1
    assert written["per_op_us"]["aten_op_us"] == shipped["per_op_us"]["aten_op_us"]
