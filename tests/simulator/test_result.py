"""`SimulationResult.slowest_rank`: the straggler, also when ranks finish together in a collective."""

from maya.simulator import simulate


def test_slowest_rank_is_the_one_the_others_wait_for(trace, nvlink_cluster):
    # Both ranks end when the all-reduce ends (t = 30 us + its duration), so their totals tie; rank 0
    # idled 20 us waiting for rank 1's 30 us kernel, so rank 1 is the straggler.
    traces = {
        0: trace().kernel(10.0).collective("all_reduce", 1024, [0, 1]).sync().table(),
        1: trace().kernel(30.0).collective("all_reduce", 1024, [0, 1]).sync().table(),
    }
    result = simulate(traces, nvlink_cluster)
    assert result.breakdown[0].total_us == result.breakdown[1].total_us
    assert result.breakdown[0].idle_us == 20.0 and result.breakdown[1].idle_us == 0.0
    assert result.slowest_rank == 1
