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


def test_top_ops_leave_the_first_iterations_set_up_out_when_later_iterations_exist(trace, nvlink_cluster):
    # Iteration 0: a 500 us model copy, then a step; iterations 1 and 2: the step alone.
    setup = trace().kernel(500.0, op="aten::_to_copy", module="").kernel(10.0, op="aten::mm", module="fc")
    steps = setup.iteration_end().kernel(10.0, op="aten::mm", module="fc").iteration_end()
    result = simulate({0: steps.kernel(10.0, op="aten::mm", module="fc").iteration_end().table()}, nvlink_cluster)
    assert result.from_iteration == 1
    assert result.top_ops["op"].tolist() == ["aten::mm"]
    assert result.top_ops["total_us"].iloc[0] == 20.0 and result.top_ops["share"].iloc[0] == 1.0
    assert result.timelines[0].column("iteration").to_pylist() == [0, 0, 0, 1, 1, 2, 2]
    # The breakdown spans the same iterations: from the end of the first (510 us) to the last (530 us).
    b = result.breakdown[0]
    assert (b.total_us, b.compute_us, b.host_bound_us, b.idle_us) == (20.0, 20.0, 0.0, 0.0)
    # One iteration only: nothing to leave out.
    single = simulate({0: trace().kernel(500.0, op="aten::_to_copy").kernel(10.0).iteration_end().table()},
                      nvlink_cluster)
    assert single.from_iteration == 0
    assert single.top_ops.set_index("op")["total_us"].to_dict() == {"aten::_to_copy": 500.0, "aten::mm": 10.0}
    assert single.breakdown[0].total_us == 510.0


def test_work_after_the_last_iteration_is_left_out_of_the_steady_state(trace, nvlink_cluster):
    # Two steps, then a final evaluation pass (100 us) and a checkpoint copy (300 us) after the last
    # optimizer step: no iteration holds them, so the breakdown and the top ops describe the steps.
    steps = (trace().kernel(500.0, op="aten::_to_copy").kernel(10.0, op="aten::mm", module="fc").iteration_end()
             .kernel(10.0, op="aten::mm", module="fc").iteration_end())
    table = steps.kernel(100.0, op="aten::addmm", module="fc").kernel(300.0, op="aten::_to_copy").table()
    result = simulate({0: table}, nvlink_cluster)
    assert result.iteration_times_us == (510.0, 10.0)
    assert (result.from_iteration, result.to_iteration) == (1, {0: 2})
    assert result.top_ops.set_index("op")["total_us"].to_dict() == {"aten::mm": 10.0}
    b = result.breakdown[0]
    assert (b.total_us, b.compute_us, b.host_bound_us, b.idle_us) == (10.0, 10.0, 0.0, 0.0)
    # One step and the evaluation: the step alone, set-up included.
    single = simulate({0: trace().kernel(500.0, op="aten::_to_copy").iteration_end()
                       .kernel(100.0, op="aten::addmm").table()}, nvlink_cluster)
    assert (single.from_iteration, single.to_iteration) == (0, {0: 1})
    assert single.top_ops.set_index("op")["total_us"].to_dict() == {"aten::_to_copy": 500.0}
    assert single.breakdown[0].total_us == 500.0
    # No iteration end at all: the whole run.
    whole = simulate({0: trace().kernel(500.0, op="aten::_to_copy").kernel(100.0, op="aten::addmm").table()},
                     nvlink_cluster)
    assert whole.to_iteration == {0: 1} and whole.breakdown[0].total_us == 600.0
