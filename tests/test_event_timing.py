"""`Event.elapsed_time` inside an emulated script returns Maya's predicted time."""

import subprocess
import sys
from pathlib import Path

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


def test_ops_without_a_model_are_warned_about_once_for_the_whole_run_not_per_timed_step():
    script = Path(__file__).parent / "emulator" / "scripts" / "timed_unmodelled.py"
    done = subprocess.run([sys.executable, "-m", "maya", "emulate", str(script)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert sum(line.startswith("step ") for line in done.stdout.splitlines()) == 3
    warnings = [line for line in done.stderr.splitlines() if "had no model" in line]
    assert len(warnings) == 1, done.stderr
    assert "aten::searchsorted.Tensor (3)" in warnings[0]
