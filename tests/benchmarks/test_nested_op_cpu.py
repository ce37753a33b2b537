"""benchmarks/nested_op_cpu.py: each profiled CPU op paired with the op it runs inside."""

import gzip
import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
_spec = importlib.util.spec_from_file_location("nested_op_cpu", ROOT / "benchmarks" / "nested_op_cpu.py")
nested_op_cpu = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nested_op_cpu)


def _op(name, ts, dur, tid=1):
    return {"ph": "X", "cat": "cpu_op", "name": name, "ts": ts, "dur": dur, "tid": tid}


def test_ops_are_paired_with_their_innermost_enclosing_op_and_backward_threads_are_left_out(tmp_path, capsys):
    events = [
        _op("aten::linear", 0, 100), _op("aten::to", 5, 20), _op("aten::_to_copy", 6, 18), _op("aten::to", 30, 22),
        _op("aten::mm", 60, 30), _op("aten::mul", 120, 18), _op("aten::mul", 150, 20),
        _op("autograd::engine::evaluate_function: MmBackward0", 0, 50, tid=2), _op("aten::mm", 5, 40, tid=2),
    ]
    pairs = nested_op_cpu.durations_by_parent(events)
    assert pairs == {("aten::linear", "top"): [100], ("aten::to", "aten::linear"): [20, 22],
                     ("aten::_to_copy", "aten::to"): [18], ("aten::mm", "aten::linear"): [30],
                     ("aten::mul", "top"): [18, 20]}
    path = tmp_path / "t.trace.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": events}, f)
    nested_op_cpu.main([str(path), "--top", "2"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[2:] == ["| aten::to | aten::linear | 2 | 21.0 |", "| aten::mul | top | 2 | 19.0 |"]
