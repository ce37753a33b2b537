"""`SimulationResult.slowest_rank`: the straggler, also when ranks finish together in a collective."""

import pytest

from maya.simulator import simulate
from maya.simulator.simulate import layer_pattern


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


def test_top_modules_count_a_models_repeated_layers_together(trace, nvlink_cluster):
    # Three blocks of one GPT-style model, each with an attention self time of 4 us and an MLP of
    # 10 us, a 30 us head and 5 us of loss outside every module.
    builder = trace()
    for i in (0, 1, 10):
        builder = builder.kernel(4.0, module=f"blocks.{i}").kernel(10.0, module=f"blocks.{i}.mlp.0")
    table = builder.kernel(30.0, module="lm_head").kernel(5.0, op="aten::nll_loss_forward", module="").iteration_end()
    result = simulate({0: table.table()}, nvlink_cluster)
    modules = result.top_modules.set_index("module")
    assert result.top_modules["module"].tolist() == ["blocks.*.mlp.*", "lm_head", "blocks.*", "<top>"]
    assert modules["total_us"].to_dict() == {"blocks.*.mlp.*": 30.0, "lm_head": 30.0, "blocks.*": 12.0, "<top>": 5.0}
    assert modules["instances"].to_dict() == {"blocks.*.mlp.*": 3, "lm_head": 1, "blocks.*": 3, "<top>": 1}
    assert modules["count"].to_dict() == {"blocks.*.mlp.*": 3, "lm_head": 1, "blocks.*": 3, "<top>": 1}
    assert modules["share"].sum() == pytest.approx(1.0)


@pytest.mark.parametrize(("module", "pattern"), [
    ("blocks.3.attn", "blocks.*.attn"),
    ("layer1.0.conv1", "layer1.*.conv1"),  # torchvision's ResNet: the stage's name keeps its digit
    ("0.1", "*.*"),  # an nn.Sequential of nn.Sequentials as the model
    ("model.layers.12.mlp.down_proj", "model.layers.*.mlp.down_proj"),
    ("stage0", "stage0"),
    ("", ""),
])
def test_layer_pattern_replaces_numeric_path_components_only(module, pattern):
    assert layer_pattern(module) == pattern


def test_gpu_time_per_phase_of_the_step(trace, nvlink_cluster):
    # Iteration 1 (the steady state): forward 10 us, backward 25 us, optimizer 5 us.
    builder = trace().kernel(100.0, phase="forward").iteration_end()
    table = (builder.kernel(4.0, phase="forward").kernel(6.0, phase="forward").kernel(25.0, phase="backward")
             .kernel(5.0, phase="optimizer").iteration_end().table())
    result = simulate({0: table}, nvlink_cluster)
    phases = result.phases.set_index("phase")
    assert phases["total_us"].to_dict() == {"backward": 25.0, "forward": 10.0, "optimizer": 5.0}
    assert phases["count"].to_dict() == {"backward": 1, "forward": 2, "optimizer": 1}
    assert result.phases["phase"].iloc[0] == "backward"
