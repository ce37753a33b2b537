"""The cost model and the Pareto front, against numbers worked out by hand."""

import math

import pytest

from maya.tune.cost import INFEASIBLE_OBJECTIVE, objective_value, time_to_train_s, training_cost_usd
from maya.tune.pareto import pareto_front


def test_time_and_cost_of_the_fixed_work():
    # 250 ms per step for 14,400 steps = 3,600 s = 1 h; 64 GPUs at $2.50/GPU-hour = $160.
    time_s = time_to_train_s(250.0, 14_400)
    assert time_s == pytest.approx(3600.0)
    assert training_cost_usd(time_s, 64, 2.5) == pytest.approx(160.0)


def test_objective_picks_cost_or_time():
    assert objective_value("cost", 3600.0, 160.0) == 160.0
    assert objective_value("time", 3600.0, 160.0) == 3600.0


@pytest.mark.parametrize("bad", [None, math.nan, math.inf, -math.inf])
def test_objective_is_finite_for_missing_or_non_finite_figures(bad):
    # The search algorithm must never see NaN or inf: it gets the finite infeasible penalty.
    assert objective_value("cost", 1.0, bad) == INFEASIBLE_OBJECTIVE
    assert objective_value("time", bad, 1.0) == INFEASIBLE_OBJECTIVE
    assert math.isfinite(INFEASIBLE_OBJECTIVE)


def test_pareto_front_by_hand():
    # (time, cost): (1, 5) fastest; (2, 3) cheaper; (2, 4) dominated by (2, 3); (3, 3) dominated
    # by (2, 3); (4, 1) cheapest; (5, 1) dominated by (4, 1); the duplicate (2, 3) is kept too.
    time_s = [1, 2, 2, 3, 4, 5, 2]
    cost = [5, 3, 4, 3, 1, 1, 3]
    assert pareto_front(time_s, cost) == [True, True, False, False, True, False, True]


def test_pareto_front_of_nothing_and_of_one():
    assert pareto_front([], []) == []
    assert pareto_front([7.0], [9.0]) == [True]
