"""DDP-style overlap of gradient all_reduces with backward compute, and the overlap slowdown."""

import pytest

from maya.estimator.collective import CollectiveModelParams
from maya.simulator import SimulationParams, simulate
from maya.simulator.overlap import add_busy_interval, stretched_end_us

NO_BASE = CollectiveModelParams(ring_base_latency_us=0.0, tree_base_latency_us=0.0, p2p_base_latency_us=0.0)
# 2-rank ring all_reduce: 2(n-1)/n * S / B = S / 450 GB/s; 67.5 MB take 150 us.
BUCKET_BYTES = 67_500_000
ALL_REDUCE_US = 2 * 1 / 2 * BUCKET_BYTES / 450e9 * 1e6


def _ddp_rank(trace):
    comm = dict(group="dp", stream=1)
    return (
        trace()
        .kernel(100.0, op="bwd", module="layer2")                 # [0, 100]
        .record(1, stream=0).wait(1, stream=1)
        .collective("all_reduce", BUCKET_BYTES, [0, 1], **comm)  # bucket 1 from 100
        .kernel(100.0, op="bwd", module="layer1")                 # overlaps bucket 1
        .record(2, stream=0).wait(2, stream=1)
        .collective("all_reduce", BUCKET_BYTES, [0, 1], **comm)  # bucket 2
        .record(3, stream=1).wait(3, stream=0)
        .kernel(10.0, op="optimizer")
        .iteration_end()
        .table()
    )


def test_ddp_all_reduce_overlaps_backward(trace, nvlink_cluster):
    assert ALL_REDUCE_US == pytest.approx(150.0)
    # Both ranks are one class: rank 1 shares rank 0's trace.
    result = simulate({0: _ddp_rank(trace)}, nvlink_cluster, rank_to_representative={0: 0, 1: 0},
                      params=SimulationParams(collective=NO_BASE))
    # Bucket 1 [100, 250], layer1 [100, 200], bucket 2 [250, 400], optimizer [400, 410].
    assert result.iteration_times_us == (pytest.approx(410.0),)
    b = result.breakdown[0]
    assert b.compute_us == pytest.approx(210.0)
    assert b.comm_us == pytest.approx(300.0)
    assert b.exposed_comm_us == pytest.approx(200.0)  # [200, 400]
    assert b.idle_us == 0.0 and b.host_bound_us == 0.0


def test_overlap_slowdown_stretches_overlapped_compute(trace, nvlink_cluster):
    params = SimulationParams(collective=NO_BASE, overlap_slowdown=2.0)
    result = simulate({0: _ddp_rank(trace)}, nvlink_cluster, rank_to_representative={0: 0, 1: 0}, params=params)
    # layer1 runs at half speed under bucket 1 [100, 250]: 75 us of work by 250, 25 more by 275.
    # Bucket 2 [275, 425]; the optimizer [425, 435] runs after it, at full speed.
    timeline = result.timeline(0)
    assert timeline["end_us"].iloc[4] == pytest.approx(275.0)
    assert result.iteration_times_us == (pytest.approx(435.0),)


def test_stretched_end_by_hand():
    starts, ends = [], []
    add_busy_interval(starts, ends, 10.0, 20.0)
    add_busy_interval(starts, ends, 30.0, 40.0)
    add_busy_interval(starts, ends, 15.0, 32.0)  # merges everything into [10, 40]
    assert (starts, ends) == ([10.0], [40.0])
    add_busy_interval(starts, ends, 50.0, 60.0)
    # 5 us before, 30 us at half speed (15 of work), 10 us gap, then 2 more of work at half speed: 4 us.
    assert stretched_end_us(5.0, 5.0 + 15.0 + 10.0 + 2.0, starts, ends, 2.0) == pytest.approx(54.0)
    assert stretched_end_us(60.0, 3.0, starts, ends, 2.0) == 63.0
