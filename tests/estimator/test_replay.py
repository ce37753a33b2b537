"""replay: tensors are built with the recorded layout, valid index values, and the op runs."""

import pytest
import torch

from maya.estimator.replay import ReplayError, TensorSpec, build_replay, encode_arguments, resolve_op


def t(i):
    return {"$t": i}


def test_addmm_with_transposed_weight_matches_reference():
    # F.linear(x[64, 32], W[48, 32], b) records addmm(b, x, W.t()) with W.t() strided (1, 32).
    r = build_replay(
        "aten::addmm", [[48], [64, 32], [32, 48]], ["float32"] * 3, [[1], [32, 1], [1, 32]],
        {"args": [t(0), t(1), t(2)]}, device="cpu",
    )
    bias, x, w_t = r.inputs
    assert [list(i.shape) for i in r.inputs] == [[48], [64, 32], [32, 48]]
    assert w_t.stride() == (1, 32)
    assert all(i.dtype == torch.float32 for i in r.inputs)
    out = r()
    torch.testing.assert_close(out, torch.addmm(bias, x, w_t.contiguous()))


def test_channels_last_bf16_convolution_runs():
    strides = [[8 * 16 * 16, 1, 16 * 8, 8], [8 * 9, 1, 3 * 8, 8]]
    attrs = {"args": [t(0), t(1), None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1]}
    r = build_replay(
        "aten::convolution", [[2, 8, 16, 16], [4, 8, 3, 3]], ["bfloat16"] * 2, strides, attrs, device="cpu"
    )
    assert r.inputs[0].is_contiguous(memory_format=torch.channels_last)
    assert r.inputs[0].dtype == torch.bfloat16
    assert list(r().shape) == [2, 4, 16, 16]


def test_expanded_stride_zero_input():
    r = build_replay(
        "aten::add.Tensor", [[4, 8], [4, 8]], ["float32"] * 2, [[8, 1], [0, 1]], {"args": [t(0), t(1)]}, device="cpu"
    )
    assert r.inputs[1].stride() == (0, 1)
    torch.testing.assert_close(r()[1], r.inputs[0][1] + r.inputs[1][0])


def test_embedding_indices_are_in_range():
    r = build_replay(
        "aten::embedding", [[7, 4], [32, 64]], ["float32", "int64"], None, {"args": [t(0), t(1)]}, device="cpu"
    )
    idx = r.inputs[1]
    assert idx.min() >= 0 and idx.max() < 7 and idx.unique().numel() > 1
    assert list(r().shape) == [32, 64, 4]


def test_embedding_backward_indices_bounded_by_num_weights():
    r = build_replay(
        "aten::embedding_dense_backward", [[8, 16, 4], [8, 16]], ["float32", "int64"], None,
        {"args": [t(0), t(1), 11, -1, False]}, device="cpu",
    )
    assert r.inputs[1].max() < 11
    assert list(r().shape) == [11, 4]


def test_embedding_bag_forward_and_backward_get_valid_indices_offsets_and_bags():
    # nn.EmbeddingBag(50, 4, mode="sum") on 6 bags of 3 lookups, recorded as a trace records it.
    fwd = build_replay(
        "aten::_embedding_bag", [[50, 4], [18], [6]], ["float32", "int64", "int64"], None,
        {"args": [t(0), t(1), t(2), False, 0, False, None]}, device="cpu",
    )
    weight, idx, offsets = fwd.inputs
    assert idx.min() >= 0 and idx.max() < 50
    assert offsets.tolist() == [0, 3, 6, 9, 12, 15]
    torch.testing.assert_close(fwd()[0], weight[idx].view(6, 3, 4).sum(1))
    bwd = build_replay(
        "aten::_embedding_bag_backward", [[6, 4], [18], [6], [18], [6], [0]], ["float32"] + ["int64"] * 5, None,
        {"args": [t(0), t(1), t(2), t(3), t(4), t(5), 50, False, 0, False, None]}, device="cpu",
    )
    grad, idx = bwd.args[0], bwd.args[1]
    # offset2bag, bag_size, max_indices come from running the forward (CPU leaves offset2bag empty
    # for sums; CUDA fills it), so the backward sums each bag's gradient into its rows.
    expected = torch.zeros(50, 4).index_add_(0, idx, grad.repeat_interleave(3, dim=0))
    torch.testing.assert_close(bwd(), expected)


def test_embedding_bag_grid_cases_replay():
    from maya.estimator.profile_grid import grid

    cases = [c for c in grid("embedding", quick=True) if "embedding_bag" in c.op]
    assert [c.op for c in cases] == ["aten::_embedding_bag", "aten::_embedding_bag_backward"]
    for c in cases:
        out = build_replay(c.op, c.input_shapes, c.input_dtypes, c.input_strides, c.attrs, device="cpu")()
        assert (out[0] if isinstance(out, tuple) else out).shape[-1] == 16


def test_nll_loss_targets_in_class_range():
    r = build_replay(
        "aten::nll_loss_forward", [[64, 5], [64]], ["float32", "int64"], None,
        {"args": [t(0), t(1), None, 1, -100]}, device="cpu",
    )
    target = r.inputs[1]
    assert target.min() >= 0 and target.max() < 5
    loss, total_weight = r()
    assert total_weight.item() == 64


def test_gather_and_index_select_index_the_right_dimension():
    r = build_replay(
        "aten::gather", [[16, 3], [16, 1]], ["float32", "int64"], None, {"args": [t(0), 1, t(1)]}, device="cpu"
    )
    assert r.inputs[1].max() < 3
    r()
    r = build_replay(
        "aten::index_select", [[5, 100], [200]], ["float32", "int64"], None, {"args": [t(0), 0, t(1)]}, device="cpu"
    )
    assert r.inputs[1].max() < 5
    assert list(r().shape) == [200, 100]


def test_bool_inputs_are_random():
    r = build_replay(
        "aten::where.self", [[1000], [1000], [1000]], ["bool", "float32", "float32"], None,
        {"args": [t(0), t(1), t(2)]}, device="cpu",
    )
    assert 0 < r.inputs[0].sum() < 1000


def test_attrs_decoding_dtype_device_memory_format():
    r = build_replay(
        "aten::_to_copy", [[2, 3, 4, 5]], ["float32"], None,
        {"args": [t(0)], "kwargs": {"dtype": {"$dtype": "bfloat16"}, "device": {"$device": "cuda"},
                                    "memory_format": {"$memory_format": "channels_last"}}},
        device="cpu",
    )
    assert r.kwargs["device"] == torch.device("cpu")  # "cuda" maps to the replay device
    out = r()
    assert out.dtype == torch.bfloat16
    assert out.is_contiguous(memory_format=torch.channels_last)


def test_repr_argument_and_unknown_op_are_refused():
    with pytest.raises(ReplayError):
        build_replay("aten::mul.Scalar", [[4]], ["float32"], None, {"args": [t(0), {"$repr": "<obj>"}]}, device="cpu")
    with pytest.raises(ReplayError):
        resolve_op("aten::no_such_op_anywhere")
    assert resolve_op("aten::mm") is torch.ops.aten.mm.default
    assert resolve_op("aten::add.Tensor") is torch.ops.aten.add.Tensor


def test_foreach_tensor_lists_and_inplace_repetition():
    attrs = {"args": [[t(0), t(1)], [t(2), t(3)], 0.5]}
    r = build_replay("aten::_foreach_lerp_.Scalar", [[3], [5], [3], [5]], ["float32"] * 4, None, attrs, device="cpu")
    before = r.inputs[0].clone()
    r()
    r()
    expected = before
    for _ in range(2):
        expected = expected + 0.5 * (r.inputs[2] - expected)
    torch.testing.assert_close(r.inputs[0], expected)


def test_fused_adamw_runs_with_positive_state():
    n = 2
    shapes = [[10], [20]] * 4 + [[], []]
    attrs = {
        "args": [[t(0), t(1)], [t(2), t(3)], [t(4), t(5)], [t(6), t(7)], [], [t(8), t(9)]],
        "kwargs": {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "weight_decay": 0.01, "eps": 1e-8,
                   "amsgrad": False, "maximize": False},
    }
    r = build_replay("aten::_fused_adamw_", shapes, ["float32"] * 10, None, attrs, device="cpu")
    assert all((s == 1).all() for s in r.inputs[8:])
    assert all((v >= 0).all() for v in r.inputs[6:8])
    r()
    assert all(torch.isfinite(p).all() for p in r.inputs[:n])


def test_attention_backward_uses_real_forward_outputs():
    q = [1, 2, 32, 16]
    strides = [[32 * 2 * 16, 16, 2 * 16, 1]] * 5 + [[64, 32, 1]]
    attrs = {"args": [t(0), t(1), t(2), t(3), t(4), t(5), 0.0, True]}
    r = build_replay(
        "aten::_scaled_dot_product_flash_attention_for_cpu_backward", [q] * 5 + [[1, 2, 32]], ["float32"] * 6,
        strides, attrs, device="cpu",
    )
    out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(
        r.args[1], r.args[2], r.args[3], 0.0, True
    )
    torch.testing.assert_close(r.args[4], out)
    torch.testing.assert_close(r.args[5], lse)
    grad_q, grad_k, grad_v = r()
    # Reference gradients through autograd on the same inputs.
    qr, kr, vr = (x.detach().clone().requires_grad_() for x in r.args[1:4])
    ref = torch.nn.functional.scaled_dot_product_attention(qr, kr, vr, is_causal=True)
    ref.backward(r.args[0])
    torch.testing.assert_close(grad_q, qr.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(grad_v, vr.grad, rtol=1e-4, atol=1e-4)


def test_encode_arguments_round_trips_through_build_replay():
    spec = TensorSpec(shape=(8, 4), dtype="bfloat16", strides=(1, 8))
    attrs, shapes, dtypes, strides = encode_arguments([spec, TensorSpec(shape=(4, 6), dtype="bfloat16")], {})
    assert attrs == {"args": [t(0), t(1)], "kwargs": {}}
    assert (shapes, dtypes, strides) == ([[8, 4], [4, 6]], ["bfloat16"] * 2, [[1, 8], [6, 1]])
    r = build_replay("aten::mm", shapes, dtypes, strides, attrs, device="cpu")
    assert r.inputs[0].stride() == (1, 8)
    again = encode_arguments(r.args, r.kwargs)
    assert again == (attrs, shapes, dtypes, strides)


def test_leading_slice_index_put_accumulates_like_dlrm_interactions():
    from maya.estimator.profile_grid import grid

    put = next(c for c in grid("index", quick=True) if c.op == "aten::index_put")
    assert put.attrs["args"][1][0] is None and put.attrs["args"][3] is True
    r = build_replay(put.op, put.input_shapes, put.input_dtypes, put.input_strides, put.attrs, device="cpu")
    dots, rows, cols, values = r.inputs
    assert rows.max() < 5 and cols.max() < 5
    expected = dots.clone()
    for b in range(4):
        for p in range(rows.numel()):
            expected[b, rows[p], cols[p]] += values[b, p]
    torch.testing.assert_close(r(), expected)


def test_a_repeated_tensor_list_shares_its_indices_and_replays_aliased():
    # Adam's `_foreach_addcmul_(exp_avg_sqs, grads, grads, value)`: the grads are read once, so the
    # row records them once and the replay passes the same tensors twice.
    state = [TensorSpec(shape=(3,), dtype="float32"), TensorSpec(shape=(5,), dtype="float32")]
    grads = [TensorSpec(shape=(3,), dtype="float32"), TensorSpec(shape=(5,), dtype="float32")]
    attrs, shapes, _, _ = encode_arguments([state, grads, grads, 0.5], {})
    assert attrs["args"][:3] == [[t(0), t(1)], [t(2), t(3)], [t(2), t(3)]]
    assert shapes == [[3], [5], [3], [5]]
    r = build_replay("aten::_foreach_addcmul_.Scalar", shapes, ["float32"] * 4, None, attrs, device="cpu")
    assert r.args[1][0] is r.args[2][0] and r.args[1][1] is r.args[2][1]
    before = [s.clone() for s in r.args[0]]
    r()
    for s, b, g in zip(r.args[0], before, r.args[1]):
        torch.testing.assert_close(s, b + 0.5 * g * g)
    # Outside a list a repeated tensor keeps an index per position (mm(x, x) reads both operands).
    x = TensorSpec(shape=(4, 4), dtype="float32")
    assert encode_arguments([x, x], {})[0]["args"] == [t(0), t(1)]
