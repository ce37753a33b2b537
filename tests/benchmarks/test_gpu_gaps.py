"""benchmarks/gpu_gaps.py: GPU idle gaps of a profiled trace and of Maya's predicted timeline."""

import gzip
import importlib.util
import json
import sys
from pathlib import Path

import pytest

import maya

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("benchmarks_gpu_gaps", ROOT / "benchmarks" / "gpu_gaps.py")
gpu_gaps = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = gpu_gaps
_spec.loader.exec_module(gpu_gaps)


def _kernel(name, ts, dur, correlation, stream=7):
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
            "args": {"correlation": correlation}}


def _launch(ts, correlation):
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts, "dur": 2,
            "args": {"correlation": correlation}}


def _cpu(name, ts, dur):
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": {}}


def test_a_profiled_gap_is_charged_to_the_innermost_cpu_op_that_launched_the_next_kernel(tmp_path):
    events = [
        _cpu("aten::mm", 0, 10), _launch(2, 1), _kernel("gemm", 5, 20, 1),
        # The optimizer's CPU-side block: the GPU idles from 25 to 125.
        _cpu("Optimizer.step#AdamW.step", 30, 200), _cpu("aten::_foreach_sqrt", 110, 30), _launch(115, 2),
        _kernel("sqrt", 125, 10, 2),
        _cpu("aten::add", 140, 5), _launch(141, 3), _kernel("add", 136, 4, 3),  # 1 us gap: latency
    ]
    path = tmp_path / "trace.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": events}, f)
    idle, count, span, busy = gpu_gaps.measured_gaps(gpu_gaps.read_events(path), min_gap_us=3.0)
    assert idle == {"aten::_foreach_sqrt": 100} and count == {"aten::_foreach_sqrt": 1}
    assert (span, busy) == (135, 34)
    assert "| aten::_foreach_sqrt | 0.100 | 1 |" in gpu_gaps.report("m", idle, count, span, busy, top=5)


def test_maya_timeline_gaps_of_one_iteration(tmp_path):
    gpt = ROOT / "examples" / "train_gpt.py"
    args = ["--batch", "4", "--seq", "64", "--dim", "64", "--layers", "2", "--heads", "4", "--vocab", "512",
            "--steps", "3"]
    s = maya.emulate(gpt, args, trace_dir=tmp_path / "t")
    assert s.exit_code == 0, s.error
    timeline = tmp_path / "t" / "timeline.json"
    events = gpu_gaps.read_events(timeline)
    idle, count, span, busy = gpu_gaps.predicted_gaps(events, iteration=2, min_gap_us=0.0)
    assert 0 < busy <= span and sum(idle.values()) == pytest.approx(span - busy)
    with pytest.raises(SystemExit, match=r"no GPU op of iteration 9 .*its iterations: \[0, 1, 2"):
        gpu_gaps.predicted_gaps(events, iteration=9, min_gap_us=3.0)
