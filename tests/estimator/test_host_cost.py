"""Host-overhead charges per trace row, computed by hand from the shipped H200 measurements."""

import json

import pandas as pd
import pytest

from maya.estimator.host_cost import (
    LIST_ENTRIES_PER_PARAMETER,
    attention_extra_us,
    composite_op_extra_us,
    forward_in_situ_factor,
    host_costs_us,
    host_overhead,
    host_scale,
)


def shipped(rows: pd.DataFrame, **kwargs):
    """Each row's cost from the shipped figures as measured, before `host_scale`
    (test_costs_from_the_shipped_figures_are_put_at_the_median_machine_and_a_users_are_not)."""
    return host_costs_us(rows, per_op_us=host_overhead("h200"), **kwargs)


def test_each_kind_of_row_pays_its_measured_cost():
    c = host_overhead("h200")
    rows = pd.DataFrame(
        {
            "kind": ["kernel", "kernel", "kernel", "sync", "event_record", "host", "kernel"],
            "phase": ["forward", "backward", "other", "forward", "forward", "forward", "optimizer"],
            "op": ["aten::mm", "aten::mm", "aten::add.Tensor", "cuda:item", "cuda:event_record",
                   "torch:checkpoint", "aten::_foreach_mul_.Scalar"],
            "input_shapes": [[[2, 2], [2, 2]], [[2, 2], [2, 2]], [[2], [2]], [], [], [], [[4]] * 24],
            "attrs": [None, None, None, None, None, json.dumps({"ops": 10}), None],
        }
    )
    host = shipped(rows)
    assert host[0] == pytest.approx(c["module_forward_op_us"] * forward_in_situ_factor("h200"))
    assert host[1] == pytest.approx(c["autograd_backward_op_us"])
    assert host[2] == pytest.approx(c["aten_op_us"])
    assert host[3] == pytest.approx(c["synchronize_us"])
    assert host[4] == 0.0
    assert host[5] == pytest.approx(c["checkpoint_region_us"] + 10 * c["checkpoint_per_op_us"])
    per_entry = c["optimizer_foreach_per_tensor_us"] / LIST_ENTRIES_PER_PARAMETER
    assert host[6] == pytest.approx(c["aten_op_us"] + 24 * per_entry)


def test_a_checkpoint_region_pays_its_forward_share_after_the_forward_and_the_rest_at_recomputation():
    c = host_overhead("h200")
    rows = pd.DataFrame({"kind": ["host", "host"], "phase": ["forward", "backward"],
                         "op": ["torch:checkpoint", "torch:checkpoint_recompute"],
                         "input_shapes": [[], []], "attrs": [json.dumps({"ops": 10})] * 2})
    whole = c["checkpoint_region_us"] + 10 * c["checkpoint_per_op_us"]
    if "checkpoint_forward_region_us" not in c:  # a profile without the split: all at the forward
        assert list(shipped(rows)) == pytest.approx([whole, 0.0])
    split = {"checkpoint_region_us": 300.0, "checkpoint_per_op_us": 70.0,
             "checkpoint_forward_region_us": 100.0, "checkpoint_forward_per_op_us": 20.0}
    assert list(host_costs_us(rows, per_op_us=split)) == pytest.approx([100.0 + 10 * 20.0, 200.0 + 10 * 50.0])
    # A forward share above the whole (two noisy lines) is capped: the recomputation never pays < 0.
    over = dict(split, checkpoint_forward_per_op_us=90.0)
    assert list(host_costs_us(rows, per_op_us=over)) == pytest.approx([100.0 + 10 * 70.0, 200.0])


def test_forward_launches_pay_the_in_situ_factor_and_figures_can_be_another_machines():
    # Real models issue a forward launch slower than the microbenchmark's module chain
    # (benchmarks/host_phase_factors.py measured 1.3-2.6x on host-bound calibration workloads).
    factor = forward_in_situ_factor("h200")
    assert 1.2 < factor < 3.0
    rows = pd.DataFrame({"kind": ["kernel", "kernel"], "phase": ["forward", "backward"], "op": ["aten::mm"] * 2,
                         "input_shapes": [[[2, 2], [2, 2]]] * 2, "attrs": [None, None]})
    c = host_overhead("h200")
    assert shipped(rows, forward_factor=1.0)[0] == pytest.approx(c["module_forward_op_us"])
    other = {"module_forward_op_us": 11.0, "autograd_backward_op_us": 33.0}
    assert list(host_costs_us(rows, per_op_us=other, forward_factor=2.0)) == pytest.approx([22.0, 33.0])


def test_dtensor_and_fsdp_host_rows_pay_the_framework_figures():
    c = host_overhead("h200")
    rows = pd.DataFrame(
        {
            "kind": ["host", "host", "host"],
            "phase": ["forward", "optimizer", "forward"],
            "op": ["dtensor:op", "dtensor:op", "fsdp:unit"],
            "input_shapes": [[], [], []],
            "attrs": [json.dumps({"ops": 0}), json.dumps({"ops": 23}), json.dumps({"ops": 12})],
        }
    )
    host = shipped(rows)
    assert host[0] == pytest.approx(c["dtensor_op_us"])
    assert host[1] == pytest.approx(c["dtensor_op_us"] + 23 * c["dtensor_list_entry_us"])
    assert host[2] == pytest.approx(c["fsdp_unit_us"] + 12 * c["fsdp_unit_per_param_us"])
    assert c["fsdp_unit_us"] > 100 and c["dtensor_op_us"] > 1  # measured, not placeholders


def test_ddp_host_rows_pay_fixed_plus_per_parameter():
    c = host_overhead("h200")
    rows = pd.DataFrame({"kind": ["host"], "phase": ["forward"], "op": ["ddp:step"], "input_shapes": [[]],
                         "attrs": [json.dumps({"ops": 148})]})
    assert shipped(rows)[0] == pytest.approx(c["ddp_step_us"] + 148 * c["ddp_param_us"])


def test_sorting_and_multi_launch_ops_pay_their_measured_extra():
    c = host_overhead("h200")
    extra = composite_op_extra_us("h200")
    rows = pd.DataFrame(
        {
            "kind": ["kernel", "kernel", "kernel", "kernel"],
            "phase": ["backward", "backward", "forward", "forward"],
            "op": ["aten::_embedding_bag_backward", "aten::index_put", "aten::nonzero", "aten::index_put_"],
            "input_shapes": [[[4096, 128], [16384]], [[8192, 768], [2048], [2048, 768]], [[2, 8192]],
                             [[8, 8], [4], [4]]],
            "attrs": [None] * 4,
        }
    )
    host = shipped(rows)
    # H200 Chrome traces: 32 launches per embedding-bag backward, 8-10 per accumulating index_put.
    assert 80 < extra["aten::_embedding_bag_backward"] < 200 and 50 < extra["aten::index_put"] < 150
    assert host[0] == pytest.approx(c["autograd_backward_op_us"] + extra["aten::_embedding_bag_backward"])
    assert host[1] == pytest.approx(c["autograd_backward_op_us"] + extra["aten::index_put"])
    forward = c["module_forward_op_us"] * forward_in_situ_factor("h200")
    assert host[2] == pytest.approx(forward + extra["aten::nonzero"])
    assert host[3] == pytest.approx(forward)  # in-place index_put_ without accumulate: one launch


def test_costs_from_the_shipped_figures_are_put_at_the_median_machine_and_a_users_are_not():
    # The shipped figures are one lease's; `host_scale` (benchmarks/host_scale.py) multiplies every cost
    # computed from them. Figures measured on the user's machine (--host-profile) stand as measured.
    from maya.emulator.rnn_kernels import RnnMode
    from maya.estimator import rnn_grid
    from maya.estimator.host_cost import launch_stream_us
    from maya.estimator.profile_grid import make_case

    scale = host_scale("h200")
    assert 0.5 <= scale <= 1.2
    shape = rnn_grid.RnnShape(mode=RnnMode.LSTM, input_size=8, hidden_size=16, num_layers=1, batch=3, steps=5,
                              bidirectional=False, dtype="float32")
    rnn = make_case("rnn", *next(iter(rnn_grid.calls(shape))))
    rows = pd.DataFrame({"kind": ["kernel", "kernel", "sync", "kernel", "host"],
                         "phase": ["forward", "backward", "forward", "forward", "forward"],
                         "op": ["aten::mm", "aten::mm", "cuda:item", rnn.op, "fsdp:unit"],
                         "input_shapes": [[[2, 2], [2, 2]]] * 2 + [[], list(rnn.input_shapes), []],
                         "attrs": [None, None, None, json.dumps(rnn.attrs), json.dumps({"ops": 12})]})
    given = host_overhead("h200")
    assert launch_stream_us(rows, per_op_us=given)[3] > 0  # the RNN row launches 5 cells
    as_measured = host_costs_us(rows, per_op_us=given)
    # FSDP2's unit figure was measured in situ on a multi-GPU machine at its own speed: not scaled.
    assert list(host_costs_us(rows)) == pytest.approx([scale * x for x in as_measured[:4]] + [as_measured[4]])
    assert list(launch_stream_us(rows)) == pytest.approx([scale * x for x in launch_stream_us(rows, per_op_us=given)])
    assert list(host_costs_us(rows, scale=1.0)) == pytest.approx(list(as_measured))


def test_an_rnn_row_launches_for_every_step_layer_and_direction():
    from maya.emulator.rnn_kernels import RnnMode
    from maya.estimator import rnn_grid
    from maya.estimator.features import rnn_cells
    from maya.estimator.host_cost import launch_stream_us
    from maya.estimator.profile_grid import make_case

    shape = rnn_grid.RnnShape(mode=RnnMode.LSTM, input_size=8, hidden_size=16, num_layers=2, batch=3, steps=5,
                              bidirectional=True, dtype="float32")
    cases = [make_case("rnn", op, args) for op, args in rnn_grid.calls(shape)]
    assert [c.op.split(".")[0] for c in cases] == ["aten::_cudnn_rnn", "aten::_cudnn_rnn_backward"]
    rows = pd.DataFrame({
        "kind": ["kernel", "kernel", "kernel"], "op": [cases[0].op, cases[1].op, "aten::mm"],
        "input_shapes": [list(cases[0].input_shapes), list(cases[1].input_shapes), [[2, 2], [2, 2]]],
        "attrs": [json.dumps(cases[0].attrs), json.dumps(cases[1].attrs), None],
    })
    cells = [rnn_cells(op, a, s) for op, a, s in zip(rows["op"], rows["attrs"], rows["input_shapes"])]
    assert cells == [20, 20, 0]  # 5 steps x 2 layers x 2 directions
    figures = {"rnn_cell_forward_us": 9.0, "rnn_cell_backward_us": 14.0}
    assert launch_stream_us(rows, per_op_us=figures).tolist() == [180.0, 280.0, 0.0]
    # The shipped H200 figures carry the RNN measurements (2026-12-02).
    shipped = host_overhead("h200")
    assert (launch_stream_us(rows) / host_scale("h200")).tolist() == pytest.approx(
        [20 * shipped["rnn_cell_forward_us"], 20 * shipped["rnn_cell_backward_us"], 0.0])


def test_cnn_layer_rows_pay_their_measured_extra_where_the_figures_have_it():
    # A convolution (cuDNN's plan lookup) and a batch norm (several kernels) cost the host more than a
    # one-launch op, by the figures' layer extras; zero extras charge nothing more.
    c = host_overhead("h200")
    rows = pd.DataFrame({
        "kind": ["kernel"] * 5, "phase": ["forward", "backward", "forward", "backward", "forward"],
        "op": ["aten::cudnn_convolution", "aten::convolution_backward", "aten::native_batch_norm",
               "aten::native_batch_norm_backward", "aten::relu_"],
        "input_shapes": [[[2, 16, 8, 8]]] * 5, "attrs": [None] * 5,
    })
    figures = {"conv_forward_extra_us": 40.0, "conv_backward_extra_us": 30.0,
               "batch_norm_forward_extra_us": 20.0, "batch_norm_backward_extra_us": 10.0}
    plain = host_costs_us(rows, per_op_us=dict.fromkeys(figures, 0.0))
    with_layers = host_costs_us(rows, per_op_us=figures)
    assert list(with_layers - plain) == pytest.approx([40.0, 30.0, 20.0, 10.0, 0.0])
    assert plain[1] == pytest.approx(c["autograd_backward_op_us"]) and plain[3] == pytest.approx(plain[1])



def test_a_foreach_row_pays_per_list_entry_even_where_a_list_repeats():
    # `_foreach_addcmul_(exp_avg_sqs, grads, grads)`: two distinct lists of 4 tensors recorded, three
    # lists walked on the host.
    entry = [{"$t": i} for i in range(4)], [{"$t": i} for i in range(4, 8)]
    attrs = json.dumps({"args": [entry[0], entry[1], entry[1], 0.5], "kwargs": {}})
    rows = pd.DataFrame({"kind": ["kernel"], "phase": ["optimizer"], "op": ["aten::_foreach_addcmul_.Scalar"],
                         "input_shapes": [[[4]] * 8], "attrs": [attrs]})
    c = host_overhead("h200")
    expected = c["aten_op_us"] + 12 * c["optimizer_foreach_per_tensor_us"] / LIST_ENTRIES_PER_PARAMETER
    assert shipped(rows)[0] == pytest.approx(expected)


def test_cudnn_attention_pays_its_measured_plan_cost_and_other_backends_do_not():
    c = host_overhead("h200")
    extra = attention_extra_us("h200")
    rows = pd.DataFrame(
        {
            "kind": ["kernel", "kernel", "kernel"],
            "phase": ["forward", "backward", "forward"],
            "op": ["aten::_scaled_dot_product_cudnn_attention", "aten::_scaled_dot_product_cudnn_attention_backward",
                   "aten::_scaled_dot_product_flash_attention"],
            "input_shapes": [[[8, 12, 1024, 64]] * 3] * 3,
            "attrs": [None] * 3,
        }
    )
    host = shipped(rows)
    # H200 Chrome traces of calibration workloads: a cuDNN attention call costs 5-8 one-launch ops profiled.
    fwd, bwd = extra["aten::_scaled_dot_product_cudnn_attention"], extra["aten::_scaled_dot_product_cudnn_attention_backward"]
    assert 20 < fwd < 80 and 20 < bwd < 100
    forward = c["module_forward_op_us"] * forward_in_situ_factor("h200")
    assert host[0] == pytest.approx(forward + fwd)
    assert host[1] == pytest.approx(c["autograd_backward_op_us"] + bwd)
    assert host[2] == pytest.approx(forward)  # no flash-attention figure was measured


def test_a_new_shape_pays_the_lookup_or_plan_and_a_routed_one_its_measured_share():
    from maya.estimator.host_cost import _host_overhead_file

    c = host_overhead("h200")
    figures = _host_overhead_file("h200")["new_shape_us"]
    share = _host_overhead_file("h200")["data_dependent_new_share"]
    marks = [{"new_shape": "gemm"}, {"new_shape": "gemm", "data_dependent_shape": True},
             {"new_shape": "gemm_k", "data_dependent_shape": True}, {"data_dependent_shape": True},
             {"new_shape": "cudnn_attention"}, {"new_shape": "conv_backward"}, {},
             {"new_shape": "conv_backward_float32"}]
    rows = pd.DataFrame(
        {
            "kind": ["kernel"] * len(marks),
            "phase": ["other"] * len(marks),
            "op": ["aten::mm", "aten::mm", "aten::mm", "aten::mm", "aten::_scaled_dot_product_flash_attention",
                   "aten::convolution_backward", "aten::mm", "aten::convolution_backward"],
            "input_shapes": [[[2, 2], [2, 2]]] * len(marks),
            "attrs": [json.dumps({"args": [], **m}) for m in marks],
        }
    )
    host = shipped(rows) - c["aten_op_us"]
    backward_conv = host_overhead("h200").get("conv_backward_extra_us", 0.0)
    # H200 (session 34): a bfloat16 GEMM's kernel lookup for a new M costs 100-1000 us, for a new K less;
    # a cuDNN attention plan tens of milliseconds.
    assert 100 < figures["gemm"] < 1000 and 0 < figures["gemm_k"] < figures["gemm"]
    assert figures["cudnn_attention"] > 10_000 and 0 < share < 1
    assert host[0] == pytest.approx(figures["gemm"])
    assert host[1] == pytest.approx(share * figures["gemm"])
    assert host[2] == pytest.approx(share * figures["gemm_k"])
    assert host[3] == pytest.approx(0.0)  # routed but met before in the process: a cached lookup
    assert host[4] == pytest.approx(figures["cudnn_attention"])  # the mark names the figure
    assert host[5] == pytest.approx(backward_conv + figures["conv_backward"])  # session 35's backward plans
    assert host[6] == pytest.approx(0.0)
    assert "conv_backward_float32" not in figures
    assert host[7] == pytest.approx(backward_conv)  # never measured: no new-shape figure


def test_a_kernel_launched_inside_another_op_pays_one_aten_launch_whatever_its_phase():
    # An operand copy cuDNN's convolution backward makes (`maya.emulator.operand_copies`) is launched
    # from C++, not from Python or by the autograd engine: it pays aten_op_us, not the backward figure.
    c = host_overhead("h200")
    rows = pd.DataFrame({"kind": ["kernel"] * 3, "phase": ["backward", "backward", "forward"],
                         "op": ["aten::clone"] * 3, "input_shapes": [[[2, 8, 16, 16]]] * 3,
                         "attrs": ['{"args": [{"$t": 0}], "kwargs": {}, "internal_launch": true}', None,
                                   '{"args": [{"$t": 0}], "kwargs": {}, "internal_launch": true}']})
    host = shipped(rows)
    assert host[0] == pytest.approx(c["aten_op_us"]) and host[2] == pytest.approx(c["aten_op_us"])
    assert host[1] == pytest.approx(c["autograd_backward_op_us"])


def test_a_machines_profile_takes_the_shipped_in_situ_cnn_extras_at_its_own_speed(tmp_path):
    # `maya profile --families host` times a convolution's and a batch norm's extra host cost on tiny
    # layers, which read 0-86 us between leases; the shipped figures come from real CNN steps' profiles
    # (benchmarks/cnn_host_extra.py), so a machine's profile takes those, scaled by its aten_op_us.
    from maya.estimator.host_cost import IN_SITU_EXTRAS, read_host_profile

    shipped = host_overhead("h200")
    tiny = {k: 0.2 for k in IN_SITU_EXTRAS}
    path = tmp_path / "host_overhead.json"
    path.write_text(json.dumps({"per_op_us": {"aten_op_us": shipped["aten_op_us"] / 2, "module_forward_op_us": 7.0, **tiny}}))
    figures = read_host_profile(path)
    assert figures["module_forward_op_us"] == 7.0  # the machine's own microbenchmarks stand
    assert figures["aten_op_us"] == pytest.approx(shipped["aten_op_us"] / 2)
    for key in IN_SITU_EXTRAS:
        assert figures[key] == pytest.approx(shipped[key] / 2)
    # Without aten_op_us there is no speed to scale by: the profile's readings stand.
    path.write_text(json.dumps({"per_op_us": {"module_forward_op_us": 7.0, **tiny}}))
    assert read_host_profile(path) == {"module_forward_op_us": 7.0, **tiny}
