"""benchmarks/phase_spans.py: a real step's GPU time per phase against the same marks on Maya's timeline."""

import contextlib
import gzip
import importlib.util
import io
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))  # phase_spans imports host_phase_factors from there
_spec = importlib.util.spec_from_file_location("benchmarks_phase_spans", ROOT / "benchmarks" / "phase_spans.py")
phase_spans = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = phase_spans
_spec.loader.exec_module(phase_spans)


def test_measured_spans_join_each_phase_with_what_follows_it_and_drop_the_last_step():
    def step(forward, backward, optimizer):
        return {"gpu_phases": {"forward_ms": forward, "backward_ms": backward, "backward_end_ms": 0.5,
                               "optimizer_ms": optimizer, "optimizer_end_ms": 0.1}}
    probe = {"steps": [step(99, 99, 99), step(10, 20, 2), step(12, 22, 4), step(11, 21, 3), step(1, 1, 1)],
             "cuda_event_step_ms": [33.0, 35.0, 34.0, 2.0]}  # the first step is warm-up; the last has no next forward
    assert phase_spans.measured_spans(probe) == pytest.approx({"forward": 11, "backward": 21.5, "optimizer": 3.1})


def test_profiled_kernels_are_placed_by_when_the_host_launched_them(tmp_path):
    def launch(ts, correlation):
        return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": ts, "dur": 1,
                "args": {"correlation": correlation}}

    def kernel(ts, dur, correlation):
        return {"ph": "X", "cat": "kernel", "name": "k", "ts": ts, "dur": dur, "args": {"correlation": correlation}}

    events = [launch(0, 1), kernel(5, 1000, 1),
              {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: MmBackward0", "ts": 100, "dur": 5, "args": {}},
              launch(101, 2), kernel(1005, 3000, 2),  # launched in backward, runs after the forward's kernel
              {"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#AdamW.step", "ts": 200, "dur": 50, "args": {}},
              launch(210, 3), kernel(4005, 500, 3)]
    path = tmp_path / "trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    assert phase_spans.profiled_busy(path) == pytest.approx({"forward": 1.0, "backward": 3.0, "optimizer": 0.5})


def test_maya_spans_tile_a_simulated_iteration(tmp_path):
    from maya.api import emulate

    with contextlib.redirect_stdout(io.StringIO()):
        summary = emulate(str(ROOT / "tests" / "emulator" / "scripts" / "adam_steps.py"), [], gpu="h200", trace_dir=tmp_path)
    assert summary.exit_code == 0
    spans, busy = phase_spans.maya_spans(tmp_path)
    # Forward, backward and optimizer run from one forward mark to the next: the whole iteration.
    assert sum(spans.values()) == pytest.approx(summary.iterations[1].time_ms, rel=1e-6)
    assert all(0 < busy[p] <= spans[p] for p in phase_spans.PHASES)


def test_paths_in_the_made_by_line_are_named_from_the_repository_root(tmp_path):
    # The table's "Made by" line is a command to rerun from the repository root, whatever the cwd was.
    assert phase_spans._shown(ROOT / "benchmarks" / "gpu" / "op_times_h200") == Path("benchmarks/gpu/op_times_h200")
    assert phase_spans._shown(tmp_path) == tmp_path
