"""benchmarks/host_model_trials.py: the in-situ ratios it reads, the median lease's figures, and each
trial's host costs."""

import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import host_model_trials as trials  # noqa: E402

TABLE = """
| lease | workload | measured step ms | host-bound | forward measured / model ms | backward measured / model ms | optimizer measured / model ms |
|---|---|---:|---|---:|---:|---:|
| lease_a | mlp | 26.44 | yes | 6.50 / 5.00 = 1.30 | 14.52 / 18.88 = 0.77 | 4.42 / 4.90 = 0.90 |
| lease_n | mlp | 18.28 | yes | 5.45 / 2.89 = 1.90 | 8.87 / 8.40 = 1.10 | 3.24 / 2.90 = 1.10 |
| lease_o | mlp | 22.38 | yes | 6.55 / 3.42 = 1.50 | 10.14 / 9.30 = 1.30 | 4.90 / 2.47 = 2.00 |
| lease_o | cnn | 32.17 | yes | 13.65 / 6.91 = 2.00 | 15.18 / 8.99 = 1.70 | 2.63 / 0.75 = 3.50 |
| lease_o | gpu_bound | 54.82 | no | 18.59 / 8.85 = 9.00 | 30.75 / 23.33 = 9.00 | 2.23 / 0.98 = 9.00 |
"""


def test_phase_ratios_take_host_bound_rows_the_median_per_workload_then_over_workloads():
    ratios = trials.phase_ratios(TABLE)
    # forward: mlp median(1.30, 1.90, 1.50) = 1.50, cnn 2.00 -> 1.75; the GPU-bound row never counts
    assert ratios["forward"] == pytest.approx(1.75)
    # backward: only the current-method leases (lease_a's 0.77 dropped): mlp median(1.10, 1.30) = 1.20, cnn 1.70
    assert ratios["backward"] == pytest.approx(1.45)
    assert ratios["optimizer"] == pytest.approx((1.10 + 3.50) / 2)


def test_the_shipped_table_gives_ratios_above_one():
    ratios = trials.phase_ratios(trials.PHASE_TABLE.read_text())
    assert set(ratios) == {"forward", "backward", "optimizer"}
    assert all(1.0 < r < 3.0 for r in ratios.values())


def test_median_lease_figures_are_the_leases_median_with_the_cnn_extras_at_that_speed():
    from maya.estimator.host_cost import IN_SITU_EXTRAS, host_overhead

    figures = trials.median_lease_figures()
    leases = [trials.lease_figures(trials.LEASES / name) for name in trials.CURRENT_LEASES]
    values = sorted(f["autograd_backward_op_us"] for f in leases)
    assert figures["autograd_backward_op_us"] == pytest.approx(values[1])
    speed = figures["aten_op_us"] / host_overhead()["aten_op_us"]
    for key in IN_SITU_EXTRAS:
        assert figures[key] == pytest.approx(host_overhead()[key] * speed)


def test_each_trial_scales_only_its_phases():
    from maya.estimator.host_cost import host_costs_us

    df = pd.DataFrame({
        "kind": ["kernel"] * 3, "op": ["aten::mm", "aten::mm", "aten::add_"], "phase": ["forward", "backward", "optimizer"],
        "attrs": [None] * 3, "input_shapes": ["[[2, 2], [2, 2]]"] * 2 + ["[[2]]"],
    })  # fmt: skip
    ratios = {"forward": 1.5, "backward": 1.2, "optimizer": 2.0}
    figures = trials.median_lease_figures()
    shipped = host_costs_us(df, scale=1.0)
    (_, host), _ = trials.trial_costs(df, "shipped", figures, ratios)
    assert host.tolist() == pytest.approx(shipped.tolist())
    (_, host), _ = trials.trial_costs(df, "shipped, optimizer in situ", figures, ratios)
    assert host.tolist() == pytest.approx([shipped[0], shipped[1], 2.0 * shipped[2]])
    lease = host_costs_us(df, per_op_us=figures, scale=1.0)
    (_, host), _ = trials.trial_costs(df, "median lease", figures, ratios)
    assert host.tolist() == pytest.approx(lease.tolist())
    forward = host_costs_us(df, per_op_us=figures, forward_factor=1.5, scale=1.0)
    (zero, host), _ = trials.trial_costs(df, "median lease, phase in situ", figures, ratios)
    assert host.tolist() == pytest.approx([forward[0], 1.2 * lease[1], 2.0 * lease[2]])
    assert zero.tolist() == pytest.approx([0.0, 0.0, 0.0])
