"""op_cost: golden FLOP and byte counts computed by hand."""

import pytest

from maya.emulator.op_cost import ATTENTION_BACKWARD_FLOP_RATIO, op_cost


def t(i):
    return {"$t": i}


def test_mm_bf16():
    flops, nbytes = op_cost("aten::mm", [[128, 256], [256, 512]], ["bfloat16"] * 2, [[128, 512]], ["bfloat16"], {})
    assert flops == 2 * 128 * 256 * 512
    assert nbytes == (128 * 256 + 256 * 512 + 128 * 512) * 2


def test_addmm_counts_bias_add_and_bias_bytes():
    flops, nbytes = op_cost(
        "aten::addmm", [[512], [128, 256], [256, 512]], ["float32"] * 3, [[128, 512]], ["float32"],
        {"args": [t(0), t(1), t(2)]},
    )
    assert flops == 2 * 128 * 256 * 512 + 128 * 512
    assert nbytes == (512 + 128 * 256 + 256 * 512 + 128 * 512) * 4


def test_bmm():
    flops, nbytes = op_cost("aten::bmm", [[8, 64, 32], [8, 32, 16]], ["float16"] * 2, [[8, 64, 16]], ["float16"], {})
    assert flops == 2 * 8 * 64 * 32 * 16
    assert nbytes == 8 * (64 * 32 + 32 * 16 + 64 * 16) * 2


def _conv_attrs(bias=None):
    return {"args": [t(0), t(1), bias, [1, 1], [1, 1], [1, 1], False, [0, 0], 1]}


def test_convolution_forward():
    # N=2, Cin=8, 16x16, Cout=16, 3x3, padding 1 -> output 2x16x16x16
    flops, nbytes = op_cost(
        "aten::convolution", [[2, 8, 16, 16], [16, 8, 3, 3]], ["float32"] * 2, [[2, 16, 16, 16]], ["float32"],
        _conv_attrs(),
    )
    assert flops == 2 * (2 * 16 * 16 * 16) * (8 * 3 * 3)
    assert nbytes == (2 * 8 * 16 * 16 + 16 * 8 * 9 + 2 * 16 * 16 * 16) * 4


@pytest.mark.parametrize("mask, multiple", [([True, True, False], 2), ([False, True, False], 1)])
def test_convolution_backward_follows_output_mask(mask, multiple):
    forward = 2 * (2 * 16 * 16 * 16) * (8 * 3 * 3)
    attrs = {"args": [t(0), t(1), t(2), None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, mask]}
    outs = [[2, 8, 16, 16], [16, 8, 3, 3]] if mask[0] else [[16, 8, 3, 3]]
    flops, _ = op_cost(
        "aten::convolution_backward", [[2, 16, 16, 16], [2, 8, 16, 16], [16, 8, 3, 3]], ["bfloat16"] * 3,
        outs, ["bfloat16"] * len(outs), attrs,
    )
    assert flops == multiple * forward


def test_attention_forward_causal_and_backward():
    b, h, s, d = 2, 4, 128, 64
    q = [b, h, s, d]
    full = 4 * b * h * s * s * d
    dense, _ = op_cost(
        "aten::_scaled_dot_product_flash_attention", [q, q, q], ["bfloat16"] * 3, [q, [b, h, s]],
        ["bfloat16", "float32"], {"args": [t(0), t(1), t(2)]},
    )
    causal, _ = op_cost(
        "aten::_scaled_dot_product_flash_attention", [q, q, q], ["bfloat16"] * 3, [q, [b, h, s]],
        ["bfloat16", "float32"], {"args": [t(0), t(1), t(2), 0.0, True]},
    )
    # (grad_out, q, k, v, out, lse, philox_seed, philox_offset, attn_bias, cum_seq_q, cum_seq_k,
    #  max_q, max_k, dropout_p, is_causal)
    backward_args = [t(0), t(1), t(2), t(3), t(4), t(5), None, None, None, None, None, s, s, 0.0, True]
    backward, _ = op_cost(
        "aten::_scaled_dot_product_cudnn_attention_backward", [q, q, q, q, q, [b, h, s]],
        ["bfloat16"] * 5 + ["float32"], [q, q, q], ["bfloat16"] * 3, {"args": backward_args},
    )
    assert dense == full
    assert causal == full / 2
    assert backward == ATTENTION_BACKWARD_FLOP_RATIO * full / 2


def test_view_ops_are_free():
    assert op_cost("aten::view", [[4, 4]], ["float32"], [[16]], ["float32"], {}) == (0.0, 0)
    assert op_cost("aten::t", [[4, 8]], ["float32"], [[8, 4]], ["float32"], {}) == (0.0, 0)


def test_elementwise_add():
    flops, nbytes = op_cost("aten::add.Tensor", [[1024], [1024]], ["bfloat16"] * 2, [[1024]], ["bfloat16"], {})
    assert flops == 1024
    assert nbytes == 3 * 1024 * 2


def test_foreach_inplace_reads_and_writes_self():
    attrs = {"args": [[t(0), t(1)], 0.5]}
    flops, nbytes = op_cost("aten::_foreach_mul_.Scalar", [[10], [20]], ["float32"] * 2, [], [], attrs)
    assert flops == 30
    assert nbytes == 2 * 30 * 4


def test_fused_adamw_rewrites_params_and_moments():
    attrs = {"args": [[t(0)], [t(1)], [t(2)], [t(3)], [], [t(4)]], "kwargs": {"lr": 1e-3}}
    flops, nbytes = op_cost("aten::_fused_adamw_", [[100]] * 4 + [[]], ["float32"] * 5, [], [], attrs)
    assert flops == 12 * 100
    # reads params, grads, exp_avg, exp_avg_sq, step; writes params, exp_avg, exp_avg_sq
    assert nbytes == (4 * 100 + 1) * 4 + 3 * 100 * 4


def test_embedding_reads_only_indexed_rows():
    flops, nbytes = op_cost(
        "aten::embedding", [[50000, 64], [8, 16]], ["float32", "int64"], [[8, 16, 64]], ["float32"],
        {"args": [t(0), t(1)]},
    )
    assert flops == 0
    assert nbytes == 8 * 16 * 8 + 2 * 8 * 16 * 64 * 4


def test_fill_writes_only():
    assert op_cost("aten::fill_.Scalar", [[1000]], ["float32"], [[1000]], ["float32"], {}) == (0.0, 4000)


def test_unknown_op_moves_bytes_without_flops():
    assert op_cost("aten::some_new_op", [[10]], ["int32"], [[10]], ["int64"], {}) == (0.0, 10 * 4 + 10 * 8)


def test_reduction_sum():
    flops, nbytes = op_cost("aten::sum.dim_IntList", [[64, 32]], ["float32"], [[32]], ["float32"], {})
    assert flops == 64 * 32
    assert nbytes == (64 * 32 + 32) * 4


def test_fsdp2_copy_in_moves_the_shards_not_the_all_gather_buffer():
    # A 16-way FSDP2 unit of two parameters: shards of 2,414,592 and 49,152 bf16 elements are copied
    # into this rank's slice of the 16 x 2,463,744-element all-gather buffer, which is passed in and
    # returned (with the slice) but not touched: 2 x the shards' bytes, not 34 x.
    shards = [[2414592], [49152]]
    flops, nbytes = op_cost(
        "fsdp::all_gather_copy_in", [*shards, [16 * 2463744]], ["bfloat16"] * 3, [[2463744], [16 * 2463744]],
        ["bfloat16"] * 2, {"args": [[t(0), t(1)], t(2), [2414592, 49152], 2463744, 3]},
    )
    assert flops == 0.0 and nbytes == 2 * (2414592 + 49152) * 2
