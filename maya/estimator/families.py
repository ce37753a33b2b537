"""Op families: which learned model estimates which aten op.

Each family gets one CatBoost model. An op maps to a family by its full name (`aten::add.Tensor`),
then by its name without the overload (`aten::add`), then by a name prefix (`aten::_foreach_`).
An op with no family has no model and falls back to the roofline.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

GEMM = "gemm"
CONV = "conv"
SDPA = "sdpa"
NORM = "norm"
SOFTMAX = "softmax"
EMBEDDING = "embedding"
ELEMENTWISE = "elementwise"
REDUCTION = "reduction"
COPY = "copy"
FOREACH = "foreach"
INDEX = "index"
RNN = "rnn"
POOL = "pool"

FAMILIES = (GEMM, CONV, SDPA, NORM, SOFTMAX, EMBEDDING, ELEMENTWISE, REDUCTION, COPY, FOREACH, INDEX, RNN, POOL)
"""Every family the profiler writes a `<family>.parquet` for."""

TF32_FAMILIES = frozenset({GEMM, CONV, SDPA, RNN})
"""Families whose float32 kernels run on tensor cores when TF32 is allowed (and whose float16 /
bfloat16 kernels run on tensor cores)."""


def _family(family: str, *ops: str) -> dict[str, str]:
    return {f"aten::{op}": family for op in ops}


OP_FAMILIES: dict[str, str] = {
    **_family(GEMM, "mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "linear", "mv", "addmv", "dot",
              "_scaled_mm", "_addmm_activation", "_int_mm"),
    **_family(CONV, "convolution", "_convolution", "conv1d", "conv2d", "conv3d", "cudnn_convolution",
              "cudnn_convolution_transpose", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
              "convolution_backward", "_convolution_double_backward", "conv_depthwise2d"),
    **_family(SDPA, "scaled_dot_product_attention", "_scaled_dot_product_flash_attention",
              "_scaled_dot_product_flash_attention_backward", "_scaled_dot_product_efficient_attention",
              "_scaled_dot_product_efficient_attention_backward", "_scaled_dot_product_cudnn_attention",
              "_scaled_dot_product_cudnn_attention_backward", "_flash_attention_forward",
              "_flash_attention_backward", "_efficient_attention_forward", "_efficient_attention_backward"),
    **_family(NORM, "native_layer_norm", "native_layer_norm_backward", "layer_norm", "native_batch_norm",
              "native_batch_norm_backward", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training",
              "_native_batch_norm_legit_functional", "cudnn_batch_norm", "cudnn_batch_norm_backward",
              "batch_norm", "native_group_norm", "native_group_norm_backward", "group_norm", "rms_norm",
              "_fused_rms_norm", "_fused_rms_norm_backward", "instance_norm"),
    **_family(SOFTMAX, "_softmax", "_softmax_backward_data", "_log_softmax", "_log_softmax_backward_data",
              "softmax", "log_softmax", "_safe_softmax"),
    **_family(EMBEDDING, "embedding", "embedding_dense_backward", "embedding_backward", "_embedding_bag",
              "_embedding_bag_forward_only", "_embedding_bag_backward", "_embedding_bag_dense_backward"),
    **_family(ELEMENTWISE, "add", "add_", "sub", "sub_", "rsub", "mul", "mul_", "div", "div_", "neg", "neg_",
              "exp", "exp_", "log", "log_", "log1p", "expm1", "sqrt", "sqrt_", "rsqrt", "rsqrt_", "pow", "pow_",
              "reciprocal", "reciprocal_", "abs", "sign", "sin", "cos", "tanh", "tanh_", "tanh_backward",
              "sigmoid", "sigmoid_", "sigmoid_backward", "relu", "relu_", "threshold", "threshold_backward",
              "gelu", "gelu_", "gelu_backward", "silu", "silu_", "silu_backward", "mish", "mish_backward",
              "hardtanh", "hardtanh_", "hardtanh_backward", "leaky_relu", "leaky_relu_backward", "elu",
              "elu_backward", "softplus", "softplus_backward", "erf", "erfinv", "clamp", "clamp_", "clamp_min",
              "clamp_min_", "clamp_max", "clamp_max_", "where", "addcmul", "addcmul_", "addcdiv", "addcdiv_",
              "lerp", "lerp_", "fill_", "fill", "zero_", "zeros_like", "ones_like", "full_like", "masked_fill",
              "masked_fill_", "native_dropout", "native_dropout_backward", "bernoulli_", "bernoulli",
              "uniform_", "normal_", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
              "logical_not", "bitwise_and", "bitwise_or", "bitwise_not", "maximum", "minimum", "floor",
              "ceil", "round", "trunc", "frac", "remainder", "fmod", "isnan", "isinf", "nan_to_num",
              "square", "arange", "linspace", "mse_loss", "mse_loss_backward", "_fused_dropout"),
    **_family(REDUCTION, "sum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "var",
              "var_mean", "std", "std_mean", "norm", "linalg_vector_norm", "all", "any",
              "cumsum", "cumprod", "logsumexp", "topk", "sort", "nll_loss_forward", "nll_loss_backward",
              "nll_loss2d_forward", "nll_loss2d_backward", "_fused_cross_entropy", "count_nonzero"),
    **_family(COPY, "copy_", "_to_copy", "clone", "contiguous", "cat", "stack", "constant_pad_nd", "repeat",
              "flip", "roll", "tril", "triu", "tril_", "triu_", "slice_backward", "select_backward",
              "narrow_copy", "permute_copy", "transpose_copy", "expand_copy", "split_with_sizes_copy",
              "_unsafe_view_copy", "unfold_backward", "reflection_pad2d", "replication_pad2d",
              "col2im", "im2col"),
    # Windowed pooling: a family of its own, as its time per byte (2-5x a copy's) would teach a
    # copy model that 4-D tensors are slow (session 17: copy_ estimates of LM traces 1.6-3x high).
    # Resampling too (2x upsampling, adaptive average pooling; profiled in session 36): on the pool
    # model's split its new held-out rows were 13.0% median / 10.6% time-weighted off, on the copy
    # model's 18.4% / 51.0% (benchmarks/results/fit_choices_h200.md).
    **_family(POOL, "max_pool2d_with_indices", "max_pool2d_with_indices_backward", "avg_pool2d",
              "avg_pool2d_backward", "upsample_nearest2d", "upsample_nearest2d_backward", "upsample_bilinear2d",
              "upsample_bilinear2d_backward", "_adaptive_avg_pool2d", "_adaptive_avg_pool2d_backward"),
    **_family(INDEX, "index", "index_put", "index_put_", "_index_put_impl_", "index_select", "index_add",
              "index_add_", "index_copy", "index_copy_", "gather", "scatter", "scatter_", "scatter_add",
              "scatter_add_", "scatter_reduce", "masked_select", "masked_scatter", "nonzero", "take",
              "put_", "index_fill_", "_unsafe_index", "_unsafe_index_put"),
    **_family(RNN, "_cudnn_rnn", "_cudnn_rnn_backward"),
    # torch.amp.GradScaler's unscale (a foreach kernel over the gradients) and update (one element),
    # profiled in session 29 (foreach_grad_scaler.parquet).
    **_family(FOREACH, "_amp_foreach_non_finite_check_and_unscale_", "_amp_update_scale_"),
}
"""aten op name (overload dropped, or full name) -> family."""

OP_FAMILY_PREFIXES: dict[str, str] = {
    "aten::_foreach_": FOREACH,
    "aten::_fused_adam": FOREACH,
    "aten::_fused_sgd": FOREACH,
    "aten::_fused_adagrad": FOREACH,
}
"""Name prefix -> family, for op groups with too many overloads to list (`_foreach_mul_.ScalarList`)."""


ROOFLINE_BY_DESIGN = frozenset({"aten::zeros", "aten::ones", "aten::full", "aten::randn", "aten::rand",
                                "aten::randint", "aten::new_zeros", "aten::new_ones", "aten::new_full",
                                "aten::scalar_tensor", "aten::randn_like", "aten::rand_like"})
"""Tensor factories and random generators (overloads included): measured on the H200 in session 23
but left to roofline on purpose, as refitting the elementwise model with them made its calibration
pairs worse (benchmarks/results/fit_choices_h200.md). They are timed by roofline without the warning
about ops no model covers. `new_zeros`, `new_ones`, `new_full` and `scalar_tensor` (a 0-d `full`)
launch the same fill kernel as the factories measured (added in session 29, not measured: Hugging
Face `generate` runs them); `randn_like` and `rand_like` (session 36: a diffusion U-Net's noise) launch
the generators' kernels."""


def roofline_by_design(op: str) -> bool:
    """Whether `op` (any overload) is one of `ROOFLINE_BY_DESIGN`."""
    return op.split(".", 1)[0] in ROOFLINE_BY_DESIGN


def family_of(op: str) -> str | None:
    """The family of one aten op name, or None when no family covers it."""
    if op in OP_FAMILIES:
        return OP_FAMILIES[op]
    for prefix, family in OP_FAMILY_PREFIXES.items():
        if op.startswith(prefix):
            return family
    return OP_FAMILIES.get(op.split(".", 1)[0])


def families_of(ops: Iterable[str]) -> np.ndarray:
    """Vectorised `family_of`: an object array of family names (None where no family applies).

    Maps each distinct op name once, so a million-row column costs one dictionary pass.
    """
    ops = np.asarray(list(ops) if not isinstance(ops, np.ndarray) else ops, dtype=object)
    uniques, inverse = np.unique(ops.astype(str), return_inverse=True)
    mapped = np.array([family_of(op) for op in uniques] + [None], dtype=object)[:-1]
    return mapped[inverse]


# (first of q/k/v, attention-mask, dropout_p, is_causal positions, sequence-major layout [B,S,H,D]).
SDPA_ARGS = {
    "aten::scaled_dot_product_attention": (0, 3, 4, 5, False),
    "aten::_scaled_dot_product_flash_attention": (0, None, 3, 4, False),
    "aten::_scaled_dot_product_flash_attention_backward": (1, None, 10, 11, False),
    "aten::_scaled_dot_product_efficient_attention": (0, 3, 5, 6, False),
    "aten::_scaled_dot_product_efficient_attention_backward": (1, 4, 9, 11, False),
    "aten::_scaled_dot_product_cudnn_attention": (0, 3, 5, 6, False),
    "aten::_scaled_dot_product_cudnn_attention_backward": (1, 8, 13, 14, False),
    "aten::_flash_attention_forward": (0, None, 7, 8, True),
    "aten::_flash_attention_backward": (1, None, 10, 11, True),
    "aten::_efficient_attention_forward": (0, 3, 8, 9, True),
    "aten::_efficient_attention_backward": (1, 4, 11, 14, True),
}
