"""`Event.elapsed_time` inside an emulated script returns Maya's predicted time."""

import subprocess
import sys
from pathlib import Path

import pyarrow.compute as pc
import pytest

import maya

SCRIPT = Path(__file__).parent / "emulator" / "scripts" / "timed_steps.py"


def test_a_script_logging_its_step_time_prints_the_prediction(tmp_path):
    log = tmp_path / "times.txt"
    summary = maya.emulate(SCRIPT, [str(log)], gpu="h200", trace_dir=tmp_path / "trace")
    assert summary.exit_code == 0, summary.error
    logged = [float(x) for x in log.read_text().split()]
    assert len(logged) == 4 and all(t > 0 for t in logged)
    # Steady-state steps: the script's own measurement is the summary's predicted iteration time
    # (the events bracket the whole step; iteration 0 of the summary also holds the set-up).
    for t, it in zip(logged[1:], summary.iterations[1:]):
        assert t == pytest.approx(it.time_ms, rel=0.05)


def test_queued_kernels_timed_by_the_script_pay_the_gaps_the_prediction_pays(tmp_path):
    # 200 queued elementwise kernels (~33 us each on an H200): the GPU front end's gap between them
    # (maya.predict.default_params) is ~4% of the step, in the summary's time and the script's own (which
    # leaves out the launch before its first event).
    log = tmp_path / "times.txt"
    script = Path(__file__).parent / "emulator" / "scripts" / "timed_queued.py"
    summary = maya.emulate(script, [str(log)], gpu="h200", trace_dir=tmp_path / "trace")
    assert summary.exit_code == 0, summary.error
    logged = [float(x) for x in log.read_text().split()]
    assert len(logged) == 3
    for t, it in zip(logged, summary.iterations):
        assert t == pytest.approx(it.time_ms, rel=0.01)


def test_ops_without_a_model_are_warned_about_once_for_the_whole_run_not_per_timed_step():
    script = Path(__file__).parent / "emulator" / "scripts" / "timed_unmodelled.py"
    done = subprocess.run([sys.executable, "-m", "maya", "emulate", str(script)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert sum(line.startswith("step ") for line in done.stdout.splitlines()) == 3
    warnings = [line for line in done.stderr.splitlines() if "had no model" in line]
    assert len(warnings) == 1, done.stderr
    assert "aten::searchsorted.Tensor (3)" in warnings[0]


def test_a_kernel_timed_behind_queued_work_times_the_kernel_not_its_launch(tmp_path):
    from maya.estimator.estimate import estimate_trace
    from maya.trace import read_rank_trace

    log = tmp_path / "times.txt"
    script = Path(__file__).parent / "emulator" / "scripts" / "timed_kernel.py"
    summary = maya.emulate(script, [str(log)], gpu="h200", trace_dir=tmp_path / "trace")
    assert summary.exit_code == 0, summary.error
    table = read_rank_trace(summary.trace_dir, 0)
    mm = estimate_trace(table.filter(pc.equal(table["op"], "aten::mm")), gpu="h200")
    kernel_ms = mm["duration_us"].iloc[-1] / 1000.0
    # The flush keeps the GPU busy while the host records the start event and launches the GEMM, so
    # the events bracket the GEMM alone (the host's launch of it, ~20 us, is hidden), as on a GPU.
    for t in [float(x) for x in log.read_text().split()]:
        assert t == pytest.approx(kernel_ms, abs=0.002)
