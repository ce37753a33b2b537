"""A 2-stage 1F1B pipeline with 2 micro-batches: the bubble is (stages - 1) * (F + B)."""

import pytest

from maya.estimator.collective import CollectiveModelParams
from maya.simulator import SimulationParams, simulate

F_US, B_US = 10.0, 20.0
FREE_P2P = SimulationParams(
    collective=CollectiveModelParams(ring_base_latency_us=0.0, tree_base_latency_us=0.0, p2p_base_latency_us=0.0)
)


def _stage0(trace):
    # warm-up F0; steady F1 then send_forward_recv_backward (one NCCL group); cool-down B1.
    return (
        trace()
        .kernel(F_US, op="fwd", module="stage0").send(1)
        .kernel(F_US, op="fwd", module="stage0").send(1).recv(1)
        .kernel(B_US, op="bwd", module="stage0").recv(1)
        .kernel(B_US, op="bwd", module="stage0").iteration_end()
        .table()
    )


def _stage1(trace):
    return (
        trace()
        .recv(0).kernel(F_US, op="fwd", module="stage1")
        .kernel(B_US, op="bwd", module="stage1").send(0).recv(0)
        .kernel(F_US, op="fwd", module="stage1")
        .kernel(B_US, op="bwd", module="stage1").send(0).iteration_end()
        .table()
    )


def test_1f1b_two_stages_known_bubble(trace, nvlink_cluster):
    result = simulate({0: _stage0(trace), 1: _stage1(trace)}, nvlink_cluster, params=FREE_P2P)
    micro_batches, stages = 2, 2
    # Stage 0: F0 [0,10] F1 [10,20], waits for B0's gradient (stage 1 runs F0 [10,20], B0 [20,40]),
    # B0 [40,60], waits for B1's gradient (stage 1: F1 [40,50], B1 [50,70]), B1 [70,90].
    expected_us = (stages - 1) * (F_US + B_US) + micro_batches * (F_US + B_US)
    assert expected_us == 90.0
    assert result.iteration_times_us == (pytest.approx(expected_us),)
    assert result.rank_iteration_ends_us == {0: (90.0,), 1: (70.0,)}
    stage0, stage1 = result.breakdown[0], result.breakdown[1]
    assert stage0.compute_us == pytest.approx(micro_batches * (F_US + B_US))
    assert stage0.idle_us == pytest.approx((stages - 1) * (F_US + B_US))  # the bubble: [20,40] + [60,70]
    assert stage1.idle_us == pytest.approx(F_US)  # waits [0,10] for the first activation
    assert stage0.host_bound_us == 0.0


def test_1f1b_top_ops_and_modules(trace, nvlink_cluster):
    result = simulate({0: _stage0(trace), 1: _stage1(trace)}, nvlink_cluster, params=FREE_P2P)
    ops = result.top_ops.set_index("op")
    assert ops.loc["bwd", "total_us"] == pytest.approx(4 * B_US)
    assert ops.loc["fwd", "count"] == 4
    assert result.top_ops["op"].iloc[0] == "bwd"
    modules = result.top_modules.set_index("module")
    assert modules.loc["stage0", "total_us"] == pytest.approx(2 * (F_US + B_US))
