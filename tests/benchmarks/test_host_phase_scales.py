"""benchmarks/host_phase_scales.py: how the two factors split the host costs, and the objective (host_scale.mean_log_error)."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import host_phase_scales as scales  # noqa: E402


def test_phase_split_scales_the_backward_rows_by_b_and_the_others_by_a():
    zero = np.array([1.0, 2.0, 0.0])
    one = np.array([11.0, 12.0, 10.0])  # scaled parts 10, 10, 10
    backward = np.array([False, True, False])
    out = scales.phase_split(zero, one, backward, a=0.5, b=2.0)
    assert out.tolist() == pytest.approx([6.0, 22.0, 5.0])
    assert scales.phase_split(zero, one, backward, 1.0, 1.0).tolist() == pytest.approx(one.tolist())


def test_the_grids_hold_the_equal_pairs_around_the_shipped_factor():
    assert {0.9, 0.95, 1.0} <= set(scales.A_GRID) & set(scales.B_GRID)
    assert min(scales.B_GRID) < min(scales.A_GRID) and max(scales.A_GRID) > max(scales.B_GRID)


def test_objective_is_the_mean_abs_log_error_at_the_pair():
    steps = {"x": {(1.0, 1.0): 20.0, (1.0, 0.5): 10.0}, "y": {(1.0, 1.0): 10.0, (1.0, 0.5): 10.0}}
    measured = {"x": 10.0, "y": 10.0}
    assert scales.mean_log_error(steps, measured, (1.0, 1.0)) == pytest.approx(math.log(2.0) / 2)
    assert scales.mean_log_error(steps, measured, (1.0, 0.5)) == pytest.approx(0.0)


def test_valley_takes_the_best_a_of_each_b():
    pairs = [(a, b) for a in scales.A_GRID for b in scales.B_GRID]
    # the error is least where a + b = 2 (or nearest it)
    steps = {"x": {(a, b): 10.0 * math.exp(abs(a + b - 2.0)) for a, b in pairs}}
    line = scales.valley(steps, {"x": 10.0}, pairs)
    assert [b for _, b in line] == list(scales.B_GRID)
    for a, b in line:
        assert abs(a + b - 2.0) == pytest.approx(min(abs(x + b - 2.0) for x in scales.A_GRID))


def test_few_lease_workloads_are_calibration_ones_outside_the_fit():
    from suite import WORKLOADS

    few = scales.few_lease_medians()
    held_out = {w.name for w in WORKLOADS if w.held_out}
    assert few and not (set(few) & held_out) and not (set(few) & set(scales.calibration_medians()))
    assert all(n < scales.MIN_LEASES for _, n in few.values())
