"""Analytic cost of one recorded op: floating-point operations and device-memory bytes.

`op_cost` sees only what a trace row holds (op name, shapes, dtypes, the attrs JSON decoded to a
dict), never tensors, so it can run for each of the millions of ops an emulation records. It is a
dict dispatch from the op name to a small formula; ops not listed fall back to "no FLOPs, every
input and output moved once".

Conventions (docs/trace-schema.md): a multiply-add is 2 FLOPs, and bytes count each input and
output tensor once (`numel * itemsize`, so an expanded tensor is counted at its logical size).
Where that rule is plainly wrong the formula says so (fills write only; gathers read only the rows
they touch).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

Shape = Sequence[int]

DTYPE_SIZE_BYTES: dict[str, int] = {
    "float64": 8, "float32": 4, "float16": 2, "bfloat16": 2,
    "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1,
    "float8_e8m0fnu": 1, "float4_e2m1fn_x2": 1,
    "complex128": 16, "complex64": 8, "complex32": 4,
    "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1,
    "uint16": 2, "uint32": 4, "uint64": 8, "bool": 1,
    "qint8": 1, "quint8": 1, "qint32": 4,
}  # fmt: skip
"""Bytes per element for each torch dtype name (without the "torch." prefix)."""

ZERO_COST_OPS = frozenset({
    "aten::view", "aten::_unsafe_view", "aten::t", "aten::transpose.int", "aten::permute",
    "aten::expand", "aten::reshape", "aten::_reshape_alias", "aten::alias", "aten::as_strided",
    "aten::slice.Tensor", "aten::select.int", "aten::unsqueeze", "aten::squeeze", "aten::squeeze.dim",
    "aten::squeeze.dims", "aten::detach", "aten::unflatten.int", "aten::flatten.using_ints",
    "aten::split.Tensor", "aten::split_with_sizes", "aten::chunk", "aten::narrow", "aten::unbind.int",
    "aten::lift_fresh", "aten::empty.memory_format", "aten::empty_strided", "aten::empty_like",
    "aten::view_as", "aten::expand_as", "aten::_unsafe_split.Tensor", "aten::diagonal",
    "aten::unfold", "aten::set_.source_Storage_storage_offset", "aten::resize_",
})  # fmt: skip
"""View, metadata and allocation ops: no kernel runs, so 0 FLOPs and 0 bytes."""

MATMUL_OPS = frozenset({"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::_addmm_activation",
                        "aten::_scaled_mm"})
"""Dense matrix multiplies: 2*M*N*K FLOPs (times the batch for bmm)."""

CONV_OPS = frozenset({"aten::convolution", "aten::_convolution", "aten::cudnn_convolution"})
"""Forward convolutions."""

CONV_BACKWARD_OPS = frozenset({"aten::convolution_backward"})
"""Convolution backward; `output_mask` says which of grad_input/grad_weight/grad_bias it computes."""

ATTENTION_OPS = frozenset({
    "aten::_scaled_dot_product_cudnn_attention", "aten::_scaled_dot_product_flash_attention",
    "aten::_scaled_dot_product_efficient_attention", "aten::_scaled_dot_product_flash_attention_for_cpu",
    "aten::_flash_attention_forward", "aten::_efficient_attention_forward",
})  # fmt: skip
"""Fused attention forward ops; q/k/v are [B, H, S, D] (the raw `_flash/_efficient` ops: [B, S, H, D])."""

ATTENTION_BACKWARD_OPS = frozenset({
    "aten::_scaled_dot_product_cudnn_attention_backward", "aten::_scaled_dot_product_flash_attention_backward",
    "aten::_scaled_dot_product_efficient_attention_backward",
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
    "aten::_flash_attention_backward", "aten::_efficient_attention_backward",
})  # fmt: skip
"""Fused attention backward ops; grad_out, q, k, v are the first four tensors."""

NORM_OPS = frozenset({
    "aten::native_layer_norm", "aten::_fused_rms_norm", "aten::native_batch_norm", "aten::cudnn_batch_norm",
    "aten::_batch_norm_with_update", "aten::_native_batch_norm_legit", "aten::_native_batch_norm_legit_functional",
    "aten::_native_batch_norm_legit_no_training", "aten::native_group_norm",
})  # fmt: skip
"""Normalisation forward ops: about `NORM_FLOPS_PER_ELEMENT` FLOPs per input element."""

NORM_BACKWARD_OPS = frozenset({
    "aten::native_layer_norm_backward", "aten::_fused_rms_norm_backward", "aten::native_batch_norm_backward",
    "aten::cudnn_batch_norm_backward", "aten::batch_norm_backward", "aten::native_group_norm_backward",
})  # fmt: skip
"""Normalisation backward ops."""

RNN_OPS = frozenset({"aten::_cudnn_rnn"})
"""cuDNN's fused multi-layer RNN forward (all layers, directions and time steps in one op)."""

RNN_BACKWARD_OPS = frozenset({"aten::_cudnn_rnn_backward"})
"""Its backward: data and weight gradients."""

RNN_BACKWARD_FLOP_RATIO = 2.0
"""Backward FLOPs per forward FLOP: the data gradient and the weight gradient each repeat the
forward's matrix products (the usual 2x of a GEMM's backward)."""

SOFTMAX_OPS = frozenset({"aten::_softmax", "aten::_log_softmax"})
"""Softmax forward: max, subtract, exp, sum, divide (or log) per element."""

SOFTMAX_BACKWARD_OPS = frozenset({"aten::_softmax_backward_data", "aten::_log_softmax_backward_data"})
"""Softmax backward."""

LOSS_OPS = frozenset({
    "aten::nll_loss_forward", "aten::nll_loss_backward", "aten::nll_loss2d_forward", "aten::nll_loss2d_backward",
})  # fmt: skip
"""Negative log-likelihood: one gather (and multiply) per target element."""

GATHER_OPS = frozenset({
    "aten::embedding", "aten::index_select", "aten::gather", "aten::index.Tensor", "aten::take",
})  # fmt: skip
"""Ops that read only the rows they index: bytes = indices + output read + output written."""

SCATTER_OPS = frozenset({
    "aten::embedding_dense_backward", "aten::index_add", "aten::index_add_", "aten::scatter.src",
    "aten::scatter_.src", "aten::scatter.value", "aten::scatter_add", "aten::scatter_add_",
    "aten::scatter_reduce.two", "aten::index_put_", "aten::index_put", "aten::_index_put_impl_",
    "aten::index_copy", "aten::index_copy_", "aten::index_fill_.int_Scalar",
})  # fmt: skip
"""Ops that write (or accumulate) indexed rows: one FLOP per source element."""

FILL_OPS = frozenset({
    "aten::fill_.Scalar", "aten::fill_.Tensor", "aten::zero_", "aten::zeros", "aten::ones", "aten::full",
    "aten::zeros_like", "aten::ones_like", "aten::full_like", "aten::new_zeros", "aten::new_ones",
    "aten::new_full", "aten::normal_", "aten::uniform_", "aten::bernoulli_.float", "aten::arange.start_step",
    "aten::arange", "aten::randn", "aten::rand", "aten::randint.low", "aten::scalar_tensor",
})  # fmt: skip
"""Ops that only write their output: 0 FLOPs, bytes = output bytes."""

COPY_OPS = frozenset({
    "aten::_to_copy", "aten::copy_", "aten::clone", "aten::contiguous", "aten::_copy_from",
    "aten::_copy_from_and_resize", "aten::cat", "aten::stack", "aten::repeat", "aten::constant_pad_nd",
    "aten::slice_scatter", "aten::select_scatter", "aten::as_strided_scatter", "aten::split_with_sizes_copy",
    "aten::_unsafe_view_copy", "aten::lift_fresh_copy", "aten::masked_fill.Scalar", "aten::masked_fill_.Scalar",
    "aten::tril", "aten::triu", "aten::flip", "aten::roll", "aten::repeat_interleave.self_int",
})  # fmt: skip
"""Data movement without arithmetic: 0 FLOPs."""

REDUCTION_OPS = frozenset({
    "aten::sum", "aten::sum.dim_IntList", "aten::mean", "aten::mean.dim", "aten::amax", "aten::amin",
    "aten::max", "aten::min", "aten::max.dim", "aten::min.dim", "aten::argmax", "aten::argmin", "aten::prod",
    "aten::prod.dim_int", "aten::var.correction", "aten::std.correction", "aten::var_mean.correction",
    "aten::linalg_vector_norm", "aten::norm.Scalar", "aten::norm.ScalarOpt_dim", "aten::logsumexp",
    "aten::cumsum", "aten::any", "aten::all", "aten::any.dim", "aten::all.dim", "aten::count_nonzero.dim_IntList",
})  # fmt: skip
"""Reductions: one FLOP per input element."""

ELEMENTWISE_FLOPS_PER_ELEMENT: dict[str, float] = {
    "aten::addcmul": 2, "aten::addcmul_": 2, "aten::addcdiv": 2, "aten::addcdiv_": 2, "aten::lerp.Scalar": 2,
    "aten::lerp_.Scalar": 2, "aten::lerp.Tensor": 2, "aten::lerp_.Tensor": 2,
    # tanh approximation of GELU (PyTorch's gelu kernel): about 8 arithmetic ops per element.
    "aten::gelu": 8, "aten::gelu_backward": 12, "aten::silu": 4, "aten::silu_backward": 6,
    "aten::sigmoid": 4, "aten::sigmoid_backward": 3, "aten::tanh": 4, "aten::tanh_backward": 3,
    "aten::softplus": 4, "aten::_fused_dropout": 3, "aten::native_dropout": 3,
    "aten::native_dropout_backward": 2, "aten::mish": 6, "aten::hardswish": 4, "aten::elu": 3,
}  # fmt: skip
"""Elementwise ops costing more than one FLOP per output element; every other op named in
`ELEMENTWISE_OPS` costs one."""

ELEMENTWISE_OPS = frozenset({
    "aten::add.Tensor", "aten::add_.Tensor", "aten::add.Scalar", "aten::add_.Scalar", "aten::sub.Tensor",
    "aten::sub_.Tensor", "aten::sub.Scalar", "aten::rsub.Scalar", "aten::rsub.Tensor", "aten::mul.Tensor",
    "aten::mul_.Tensor", "aten::mul.Scalar", "aten::mul_.Scalar", "aten::div.Tensor", "aten::div_.Tensor",
    "aten::div.Scalar", "aten::div_.Scalar", "aten::div.Tensor_mode", "aten::neg", "aten::neg_", "aten::abs",
    "aten::pow.Tensor_Scalar", "aten::pow.Tensor_Tensor", "aten::pow.Scalar", "aten::pow_.Scalar",
    "aten::sqrt", "aten::sqrt_", "aten::rsqrt", "aten::rsqrt_", "aten::exp", "aten::exp_", "aten::log",
    "aten::log1p", "aten::sin", "aten::cos", "aten::reciprocal", "aten::relu", "aten::relu_",
    "aten::threshold_backward", "aten::where.self", "aten::where.ScalarOther", "aten::where.ScalarSelf",
    "aten::maximum", "aten::minimum", "aten::clamp", "aten::clamp_", "aten::clamp_min", "aten::clamp_min_",
    "aten::clamp_max", "aten::eq.Tensor", "aten::eq.Scalar", "aten::ne.Scalar", "aten::ne.Tensor",
    "aten::lt.Scalar", "aten::lt.Tensor", "aten::gt.Scalar", "aten::gt.Tensor", "aten::le.Scalar",
    "aten::ge.Scalar", "aten::logical_not", "aten::logical_and", "aten::bitwise_not", "aten::sign",
    "aten::erf", "aten::hardtanh", "aten::leaky_relu", "aten::square", "aten::isinf", "aten::isnan",
    "aten::_amp_update_scale_",
    *ELEMENTWISE_FLOPS_PER_ELEMENT,
})  # fmt: skip
"""Elementwise ops: FLOPs = output elements times the per-element count."""

FOREACH_FLOPS_PER_ELEMENT: dict[str, float] = {
    "_foreach_addcmul_": 2, "_foreach_addcdiv_": 2, "_foreach_lerp_": 2, "_foreach_norm": 2,
    "_foreach_copy_": 0, "_foreach_zero_": 0,
}  # fmt: skip
"""Foreach ops (by name without overload) costing other than one FLOP per element of `self`."""

FUSED_OPTIMIZER_FLOPS_PER_ELEMENT: dict[str, float] = {
    # Adam(W) per parameter: weight decay, two moment updates, bias corrections, sqrt, add eps,
    # divide, multiply by lr, subtract: about 12 arithmetic ops (counted from torch.optim.adam).
    "aten::_fused_adam_": 12, "aten::_fused_adamw_": 12, "aten::_fused_sgd_": 4, "aten::_fused_adagrad_": 6,
}  # fmt: skip
"""Fused optimizer ops: FLOPs per parameter element."""

FUSED_OPTIMIZER_WRITTEN_LISTS: dict[str, int] = {
    "aten::_fused_adam_": 3, "aten::_fused_adamw_": 3, "aten::_fused_sgd_": 2, "aten::_fused_adagrad_": 2,
}  # fmt: skip
"""How many leading tensor lists a fused optimizer rewrites (params, moments); they return nothing."""

NORM_FLOPS_PER_ELEMENT = 5
"""Layer/RMS/batch norm forward: mean, variance, subtract, scale, shift per element (approximate)."""

NORM_BACKWARD_FLOPS_PER_ELEMENT = 8
"""Norm backward: input gradient and the two parameter-gradient reductions (approximate)."""

SOFTMAX_FLOPS_PER_ELEMENT = 5
"""Softmax forward: max, subtract, exp, sum, divide."""

SOFTMAX_BACKWARD_FLOPS_PER_ELEMENT = 4
"""Softmax backward: multiply, row sum, subtract, multiply."""

ATTENTION_BACKWARD_FLOP_RATIO = 2.5
"""Attention backward FLOPs / forward FLOPs: 5 matmuls against 2 (FlashAttention-2, Dao 2023, sec. 4)."""


def op_cost(
    op: str,
    input_shapes: Sequence[Shape],
    input_dtypes: Sequence[str],
    output_shapes: Sequence[Shape],
    output_dtypes: Sequence[str],
    attrs: Mapping[str, Any] | None,
) -> tuple[float, int]:
    """FLOPs and device-memory bytes of one op, from its trace-row metadata.

    Args:
        op: aten op name with overload unless default, e.g. "aten::mm", "aten::add.Tensor".
        input_shapes: shape of every tensor argument, in the trace's flattening order.
        input_dtypes: dtype name of every tensor argument ("bfloat16").
        output_shapes: shape of every tensor result.
        output_dtypes: dtype name of every tensor result.
        attrs: the decoded attrs JSON, {"args": [...], "kwargs": {...}}; tensors are {"$t": i}.

    Returns:
        (flops, bytes): floating-point operations (a multiply-add is 2) and bytes read plus
        written in device memory.
    """
    if op in ZERO_COST_OPS:
        return 0.0, 0
    rule = _RULES.get(op)
    if rule is None:
        rule = _prefix_rule(op)
    return rule(op, input_shapes, input_dtypes, output_shapes, output_dtypes, attrs or {})


# ---------------------------------------------------------------------------------------------
# Helpers: sizes and argument lookup.


def _numel(shape: Shape) -> int:
    return math.prod(shape)


def _nbytes(shape: Shape, dtype: str) -> int:
    return math.prod(shape) * DTYPE_SIZE_BYTES.get(dtype, 4)


def _total_bytes(shapes: Sequence[Shape], dtypes: Sequence[str]) -> int:
    return sum(math.prod(s) * DTYPE_SIZE_BYTES.get(d, 4) for s, d in zip(shapes, dtypes))


def _io_bytes(ins, in_dt, outs, out_dt) -> int:
    return _total_bytes(ins, in_dt) + _total_bytes(outs, out_dt)


def _arg(attrs: Mapping[str, Any], index: int, name: str, default: Any) -> Any:
    """An argument by position or keyword; the dispatcher drops trailing defaulted arguments."""
    args = attrs.get("args", ())
    if index < len(args):
        return args[index]
    return attrs.get("kwargs", {}).get(name, default)


def _list_len(value: Any) -> int:
    return len(value) if isinstance(value, list) else 0


# ---------------------------------------------------------------------------------------------
# Rules: each takes (op, input_shapes, input_dtypes, output_shapes, output_dtypes, attrs).


def _default(op, ins, in_dt, outs, out_dt, attrs):
    return 0.0, _io_bytes(ins, in_dt, outs, out_dt)


def _matmul(op, ins, in_dt, outs, out_dt, attrs):
    """mm/bmm: 2*M*N*K (times batch); addmm/baddbmm add one FLOP per output element for the bias, and
    _scaled_mm (float8) one for its scaling."""
    if op in ("aten::mm", "aten::bmm", "aten::_scaled_mm"):  # _scaled_mm(a, b, scale_a, scale_b, ...)
        a = ins[0]
    else:  # addmm(bias, a, b), baddbmm(bias, a, b), _addmm_activation(bias, a, b)
        a = ins[1]
    k = a[-1]
    out_numel = _numel(outs[0]) if outs else _numel(a[:-1]) * (ins[-1][-1] if ins else 0)
    flops = 2.0 * out_numel * k
    if op not in ("aten::mm", "aten::bmm"):
        flops += out_numel
    return flops, _io_bytes(ins, in_dt, outs, out_dt)


GROUPED_MATMUL_OPS = frozenset({"aten::_grouped_mm", "aten::_scaled_grouped_mm"})
"""Mixture-of-experts GEMMs: one matmul per group (expert) of rows, in one call."""


def _grouped_matmul(op, ins, in_dt, outs, out_dt, attrs):
    """_grouped_mm(a, b, offs): every output element is a K-long dot product of its group, 2*K FLOPs,
    except 2-D x 2-D (the weight gradient, [M, T] x [T, N] -> [groups, M, N]), where each group
    contracts only its own rows of T: 2*M*T*N in all."""
    a, b = ins[0], ins[1]
    if len(a) == 2 and len(b) == 2:
        flops = 2.0 * a[0] * a[1] * b[1]
    else:
        flops = 2.0 * (_numel(outs[0]) if outs else 0) * a[-1]
    return flops, _io_bytes(ins, in_dt, outs, out_dt)


def _conv_forward_flops(out_shape: Shape, weight_shape: Shape, transposed: bool, in_shape: Shape) -> float:
    """2 * N*Cout*Hout*Wout * Cin/groups*kh*kw; weight is [Cout, Cin/groups, kh, kw].

    A transposed convolution is the backward-data of a convolution: 2 * numel(input) * prod(weight[1:]).
    """
    per_output = _numel(weight_shape[1:])
    return 2.0 * _numel(in_shape if transposed else out_shape) * per_output


def _convolution(op, ins, in_dt, outs, out_dt, attrs):
    transposed = bool(_arg(attrs, 6, "transposed", False))
    flops = _conv_forward_flops(outs[0], ins[1], transposed, ins[0])
    if _arg(attrs, 2, "bias", None) is not None:
        flops += _numel(outs[0])
    return flops, _io_bytes(ins, in_dt, outs, out_dt)


def _convolution_backward(op, ins, in_dt, outs, out_dt, attrs):
    """grad_input and grad_weight each cost one forward; grad_bias one FLOP per grad_output element."""
    grad_out, inp, weight = ins[0], ins[1], ins[2]
    transposed = bool(_arg(attrs, 7, "transposed", False))
    mask = _arg(attrs, 10, "output_mask", [True, True, True])
    fwd = _conv_forward_flops(grad_out, weight, transposed, inp)
    flops = fwd * (bool(mask[0]) + bool(mask[1])) + (_numel(grad_out) if mask[2] else 0)
    return flops, _io_bytes(ins, in_dt, outs, out_dt)


_CAUSAL_ARG_INDEX = {
    "aten::_scaled_dot_product_cudnn_attention": 6,
    "aten::_scaled_dot_product_flash_attention": 4,
    "aten::_scaled_dot_product_efficient_attention": 6,
    "aten::_scaled_dot_product_flash_attention_for_cpu": 4,
    "aten::_flash_attention_forward": 8,
    "aten::_scaled_dot_product_cudnn_attention_backward": 14,
    "aten::_scaled_dot_product_flash_attention_backward": 11,
    "aten::_scaled_dot_product_efficient_attention_backward": 11,
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward": 7,
    "aten::_flash_attention_backward": 10,
}
"""Position of `is_causal` in each attention op's schema."""


def _attention_forward_flops(op: str, q: Shape, k: Shape, v: Shape, attrs) -> float:
    """4*B*H*Sq*Sk*D (QK^T and PV, 2*Sq*Sk*D each), halved when causal (FlashAttention-2 counting)."""
    if op in ("aten::_flash_attention_forward", "aten::_efficient_attention_forward",
              "aten::_flash_attention_backward", "aten::_efficient_attention_backward"):  # fmt: skip
        b, sq, h, d = q[0], q[1], q[2], q[3]  # raw kernels take [B, S, H, D]
        sk, dv = k[1], v[3]
    else:
        b, h, sq, d = q[0], q[1], q[2], q[3]
        sk, dv = k[2], v[3]
    flops = 2.0 * b * h * sq * sk * (d + dv)
    if op == "aten::_efficient_attention_forward":
        causal = _arg(attrs, 9, "custom_mask_type", 0) != 0
    else:
        index = _CAUSAL_ARG_INDEX.get(op)
        causal = bool(_arg(attrs, index, "is_causal", False)) if index is not None else False
    return flops / 2 if causal else flops


def _attention(op, ins, in_dt, outs, out_dt, attrs):
    flops = _attention_forward_flops(op, ins[0], ins[1], ins[2], attrs)
    return flops, _io_bytes(ins, in_dt, outs, out_dt)


def _attention_backward(op, ins, in_dt, outs, out_dt, attrs):
    flops = ATTENTION_BACKWARD_FLOP_RATIO * _attention_forward_flops(op, ins[1], ins[2], ins[3], attrs)
    return flops, _io_bytes(ins, in_dt, outs, out_dt)


def _rnn_forward_flops(ins, attrs) -> float:
    """2 * tokens * (elements of every weight matrix): each layer's and direction's W_ih, W_hh (and
    W_hr) multiplies every token once; the gate nonlinearities are ignored next to the products."""
    tokens = _numel(ins[0]) // max(ins[0][-1], 1) if ins and ins[0] else 0
    weights = _arg(attrs, 1, "weight", [])
    indices = [w["$t"] for w in weights if isinstance(w, dict) and "$t" in w] if isinstance(weights, list) else []
    matrix_elements = sum(_numel(ins[i]) for i in indices if i < len(ins) and len(ins[i]) == 2)
    return 2.0 * tokens * matrix_elements


def _rnn(op, ins, in_dt, outs, out_dt, attrs):
    flops = _rnn_forward_flops(ins, attrs)
    if op in RNN_BACKWARD_OPS:
        flops *= RNN_BACKWARD_FLOP_RATIO
    return flops, _io_bytes(ins, in_dt, outs, out_dt)


def _per_input_element(flops_per_element: float) -> Callable:
    def rule(op, ins, in_dt, outs, out_dt, attrs):
        return flops_per_element * (_numel(ins[0]) if ins else 0), _io_bytes(ins, in_dt, outs, out_dt)

    return rule


def _per_output_element(flops_per_element: float) -> Callable:
    def rule(op, ins, in_dt, outs, out_dt, attrs):
        return flops_per_element * (_numel(outs[0]) if outs else 0), _io_bytes(ins, in_dt, outs, out_dt)

    return rule


def _norm_backward(op, ins, in_dt, outs, out_dt, attrs):
    # grad_out is first, except cudnn_batch_norm_backward(input, grad_output, ...): same shape.
    return NORM_BACKWARD_FLOPS_PER_ELEMENT * _numel(ins[0]), _io_bytes(ins, in_dt, outs, out_dt)


def _nll_loss(op, ins, in_dt, outs, out_dt, attrs):
    target = ins[1] if op.endswith("forward") else ins[2]
    return float(_numel(target)), _io_bytes(ins, in_dt, outs, out_dt)


def _gather(op, ins, in_dt, outs, out_dt, attrs):
    """0 FLOPs; reads the indices and the indexed rows (as many bytes as the output), writes the output."""
    out_bytes = _total_bytes(outs, out_dt)
    index_bytes = _total_bytes(ins[1:], in_dt[1:])
    return 0.0, index_bytes + 2 * out_bytes


def _scatter(op, ins, in_dt, outs, out_dt, attrs):
    """One FLOP per source element; the destination is read and written, sources read once."""
    if op == "aten::embedding_dense_backward":
        # grad_output [.., C] and indices read; the [num_weights, C] gradient is zeroed and accumulated.
        return float(_numel(ins[0])), _io_bytes(ins, in_dt, outs, out_dt)
    src_numel = _numel(ins[-1]) if len(ins) > 1 else 0
    return float(src_numel), _io_bytes(ins, in_dt, outs, out_dt)


def _fill(op, ins, in_dt, outs, out_dt, attrs):
    """Writes only: the output (or, for an in-place fill, `self`) once."""
    if outs:
        return 0.0, _total_bytes(outs, out_dt)
    return 0.0, _total_bytes(ins[:1], in_dt[:1])


def _foreach(op, ins, in_dt, outs, out_dt, attrs):
    """FLOPs per element of the `self` list; an in-place foreach also writes `self` back."""
    name = op.split("::", 1)[1].split(".", 1)[0]
    n_self = _list_len(_arg(attrs, 0, "self", None)) or len(ins)
    self_numel = sum(_numel(s) for s in ins[:n_self])
    flops = FOREACH_FLOPS_PER_ELEMENT.get(name, 1) * self_numel
    nbytes = _io_bytes(ins, in_dt, outs, out_dt)
    if name.endswith("_") and not outs:
        nbytes += _total_bytes(ins[:n_self], in_dt[:n_self])
    return float(flops), nbytes


def _fused_optimizer(op, ins, in_dt, outs, out_dt, attrs):
    """Per-parameter FLOPs times parameter elements; params and moment lists are rewritten."""
    n_params = _list_len(_arg(attrs, 0, "self", None)) or 1
    param_numel = sum(_numel(s) for s in ins[:n_params])
    written = FUSED_OPTIMIZER_WRITTEN_LISTS[op]
    nbytes = _io_bytes(ins, in_dt, outs, out_dt)
    # Lists are params, grads, moment1, moment2, ...: params and the moments are written back.
    for list_index in (0, *range(2, written + 1)):
        lo = list_index * n_params
        nbytes += _total_bytes(ins[lo : lo + n_params], in_dt[lo : lo + n_params])
    return float(FUSED_OPTIMIZER_FLOPS_PER_ELEMENT[op] * param_numel), nbytes


def _fsdp_all_gather_copy_in(op, ins, in_dt, outs, out_dt, attrs):
    """FSDP2's copy of this rank's parameter shards (`all_gather_inputs`, the first list) into its slice
    of the all-gather buffer: one `_foreach_copy_`, which reads and writes the shards only. The buffer,
    world_size times larger, is passed in and returned but not touched (torch's
    `_fsdp_collectives.all_gather_copy_in`)."""
    n_shards = _list_len(_arg(attrs, 0, "all_gather_inputs", None)) or max(len(ins) - 1, 0)
    return 0.0, 2 * _total_bytes(ins[:n_shards], in_dt[:n_shards])


def _prefix_rule(op: str) -> Callable:
    """Rule for an op not named in any set: foreach ops by prefix, else the default."""
    if op.startswith("aten::_foreach_"):
        return _foreach
    return _default


_RULES: dict[str, Callable] = {}
for _names, _rule in (
    (MATMUL_OPS, _matmul),
    (GROUPED_MATMUL_OPS, _grouped_matmul),
    (CONV_OPS, _convolution),
    (CONV_BACKWARD_OPS, _convolution_backward),
    (ATTENTION_OPS, _attention),
    (ATTENTION_BACKWARD_OPS, _attention_backward),
    (RNN_OPS | RNN_BACKWARD_OPS, _rnn),
    (NORM_OPS, _per_input_element(NORM_FLOPS_PER_ELEMENT)),
    (NORM_BACKWARD_OPS, _norm_backward),
    (SOFTMAX_OPS, _per_input_element(SOFTMAX_FLOPS_PER_ELEMENT)),
    (SOFTMAX_BACKWARD_OPS, _per_input_element(SOFTMAX_BACKWARD_FLOPS_PER_ELEMENT)),
    (LOSS_OPS, _nll_loss),
    (GATHER_OPS, _gather),
    (SCATTER_OPS, _scatter),
    (FILL_OPS, _fill),
    (COPY_OPS, _default),
    (REDUCTION_OPS, _per_input_element(1)),
    (ELEMENTWISE_OPS, _per_output_element(1)),
    (frozenset(FUSED_OPTIMIZER_FLOPS_PER_ELEMENT), _fused_optimizer),
):
    for _name in _names:
        _RULES[_name] = _rule
for _name, _per_element in ELEMENTWISE_FLOPS_PER_ELEMENT.items():
    _RULES[_name] = _per_output_element(_per_element)
_RULES["fsdp::all_gather_copy_in"] = _fsdp_all_gather_copy_in
del _names, _rule, _name, _per_element
