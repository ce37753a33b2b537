"""Collectives across ranks: matching, hand-computed NCCL times, rank classes and clear errors."""

import pytest

from maya.estimator.collective import CollectiveModelParams
from maya.simulator import CollectiveMismatchError, SimulationParams, simulate

MIB = 1 << 20
NO_BASE = CollectiveModelParams(ring_base_latency_us=0.0, tree_base_latency_us=0.0, p2p_base_latency_us=0.0)


def test_four_rank_ring_all_reduce_over_nvlink(trace, nvlink_cluster):
    group = [0, 1, 2, 3]
    traces = {r: trace().collective("all_reduce", MIB, group).table() for r in group}
    result = simulate(traces, nvlink_cluster, params=SimulationParams(collective=NO_BASE))
    # Ring all_reduce: 2(n-1)/n * S / B with n=4, S=1 MiB, B=450 GB/s, no latency terms.
    expected_us = 2 * 3 / 4 * MIB / 450e9 * 1e6
    assert expected_us == pytest.approx(3.4953, abs=1e-4)
    assert result.iteration_times_us == (pytest.approx(expected_us),)
    for r in group:
        assert result.timeline(r)["end_us"].iloc[0] == pytest.approx(expected_us)


def test_collective_waits_for_the_last_rank(trace, nvlink_cluster):
    group = [0, 1]
    traces = {
        0: trace().collective("all_reduce", 0, group).kernel(5.0).table(),
        1: trace().kernel(40.0).collective("all_reduce", 0, group).table(),  # reaches it at 40
    }
    params = SimulationParams(collective=CollectiveModelParams(ring_base_latency_us=2.0))
    result = simulate(traces, nvlink_cluster, params=params)
    # 0 bytes, zero link latency: the all_reduce costs its 2 us base and starts at 40 on both ranks.
    assert result.timeline(0)["start_us"].tolist() == [40.0, 42.0]
    assert result.breakdown[0].idle_us == pytest.approx(40.0)
    assert result.iteration_times_us == (47.0,)


def test_host_sync_behind_a_pending_collective(trace, nvlink_cluster):
    group = [0, 1]
    traces = {
        0: trace().collective("all_reduce", 0, group).sync().kernel(1.0).table(),
        1: trace(host_us=30.0).collective("all_reduce", 0, group).table(),  # issued at 30
    }
    result = simulate(traces, nvlink_cluster, params=SimulationParams(collective=NO_BASE))
    timeline = result.timeline(0)
    assert timeline["end_us"].iloc[1] == 30.0  # the host leaves the sync when the all_reduce ends
    assert timeline["start_us"].iloc[2] == 30.0


def test_event_recorded_behind_pending_collective_blocks_other_stream(trace, nvlink_cluster):
    group = [0, 1]
    traces = {
        0: trace().collective("all_reduce", 0, group, stream=1).record(3, stream=1).wait(3, stream=0)
        .kernel(10.0, stream=0).table(),
        1: trace().kernel(25.0).collective("all_reduce", 0, group).table(),
    }
    result = simulate(traces, nvlink_cluster, params=SimulationParams(collective=NO_BASE))
    assert result.timeline(0)["start_us"].iloc[3] == 25.0
    assert result.iteration_times_us == (35.0,)


def test_rank_classes_use_the_representative_trace(trace, nvlink_cluster):
    # 8 ranks: TP pairs (0,1), (2,3), ... with every pair identical to (0, 1).
    tp = lambda r: [r - r % 2, r - r % 2 + 1]  # noqa: E731
    traces = {
        r: trace().kernel(10.0).collective("all_reduce", MIB, tp(r), group="tp")
        .collective("all_reduce", 4 * MIB, [r % 2 + 2 * i for i in range(4)], group=f"dp{r % 2}").table()
        for r in (0, 1)
    }
    mapping = {r: r % 2 for r in range(8)}
    result = simulate(traces, nvlink_cluster, rank_to_representative=mapping, params=SimulationParams(collective=NO_BASE))
    tp_us = 2 * 1 / 2 * MIB / 450e9 * 1e6
    dp_us = 2 * 3 / 4 * 4 * MIB / 450e9 * 1e6
    assert result.world_size == 8
    assert result.breakdown[0].members == 4
    assert result.iteration_times_us == (pytest.approx(10.0 + tp_us + dp_us),)


def test_mismatched_op_raises_naming_group_ranks_and_call(trace, nvlink_cluster):
    traces = {
        0: trace().collective("all_reduce", MIB, [0, 1], group="tp0").table(),
        1: trace().collective("all_gather", MIB, [0, 1], group="tp0").table(),
    }
    with pytest.raises(CollectiveMismatchError, match=r"group 'tp0' call #0.*rank 0 issued all_reduce of 1048576 bytes.*rank 1 issued all_gather"):
        simulate(traces, nvlink_cluster)


def test_mismatched_size_raises(trace, nvlink_cluster):
    traces = {r: trace().collective("all_reduce", MIB * (r + 1), [0, 1]).table() for r in (0, 1)}
    with pytest.raises(CollectiveMismatchError, match="1048576 bytes.*2097152 bytes"):
        simulate(traces, nvlink_cluster)


def test_missing_call_raises_instead_of_hanging(trace, nvlink_cluster):
    traces = {
        0: trace().collective("all_reduce", MIB, [0, 1], group="dp").collective("all_reduce", MIB, [0, 1], group="dp").table(),
        1: trace().collective("all_reduce", MIB, [0, 1], group="dp").table(),
    }
    with pytest.raises(CollectiveMismatchError) as error:
        simulate(traces, nvlink_cluster)
    message = str(error.value)
    assert "call #1 (all_reduce of 1048576 bytes) on group 'dp' ranks [0, 1]" in message
    assert "issued by rank(s) [0], never matched by rank(s) [1]" in message
    assert "rank 1 issues 1 call(s) on group 'dp' and never this one" in message


def test_crossed_order_deadlock_is_reported(trace, nvlink_cluster):
    traces = {
        0: trace().collective("all_reduce", 0, [0, 1], group="a").collective("all_reduce", 0, [0, 1], group="b").table(),
        1: trace().collective("all_reduce", 0, [0, 1], group="b").collective("all_reduce", 0, [0, 1], group="a").table(),
    }
    with pytest.raises(CollectiveMismatchError, match="never reaches it: stream 0 waits for all_reduce #0 on group 'b'"):
        simulate(traces, nvlink_cluster)


def test_send_without_recv_raises(trace, nvlink_cluster):
    traces = {0: trace().send(1, 64).table(), 1: trace().kernel(1.0).table()}
    with pytest.raises(CollectiveMismatchError, match="send #0 from rank 0 to rank 1 of 64 bytes"):
        simulate(traces, nvlink_cluster)


def test_send_recv_pair_over_nvlink(trace, nvlink_cluster):
    traces = {0: trace().kernel(10.0).send(1, MIB).table(), 1: trace().recv(0, MIB).kernel(1.0).table()}
    result = simulate(traces, nvlink_cluster, params=SimulationParams(collective=NO_BASE))
    transfer_us = MIB / 450e9 * 1e6
    assert result.timeline(1)["start_us"].iloc[1] == pytest.approx(10.0 + transfer_us)


def test_collective_outside_world_raises(trace, nvlink_cluster):
    with pytest.raises(CollectiveMismatchError, match="member rank 5 is outside the job"):
        simulate({0: trace().collective("all_reduce", 0, [0, 5]).table()}, nvlink_cluster)
