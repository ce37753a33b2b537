"""The shape grids the GPU profiler times: one list of `ProfileCase`s per op family.

Each case is encoded exactly as the emulator records a trace row (docs/trace-schema.md): the
aten op name with overload, tensors in flattening order, and attrs with tensors as `{"$t": i}`.
Trailing positional arguments equal to their schema default, and keyword-only arguments equal
to their default, are dropped, as PyTorch's Python dispatch does before a dispatch mode sees them.

Shapes are chosen to span real training: the three matmuls behind every `nn.Linear` of GPT-2,
Llama and similar models, ResNet convolutions, SDPA at 128..8192 tokens, and elementwise ops from
one element to 2 GiB. `quick=True` gives a few tiny cases per family, for tests.

Only torch and the standard library are imported: this runs on the GPU profiling machine.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from maya.estimator import rnn_grid
from maya.estimator.replay import TensorSpec, encode_arguments, resolve_op

GIB = 1 << 30

FAMILIES = (
    "gemm", "conv", "sdpa", "norm", "softmax", "embedding", "elementwise", "reduction", "copy", "foreach", "index",
    "rnn", "pool",
)  # fmt: skip
"""Op families with a shape grid, in the order the profiler runs them (as `maya.estimator.families`)."""

CUDA_ONLY_OPS = frozenset({
    "aten::_scaled_dot_product_cudnn_attention", "aten::_scaled_dot_product_cudnn_attention_backward",
    "aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_flash_attention_backward",
    "aten::_scaled_dot_product_efficient_attention", "aten::_scaled_dot_product_efficient_attention_backward",
    "aten::cudnn_batch_norm", "aten::cudnn_batch_norm_backward", "aten::_fused_rms_norm_backward",
    "aten::_cudnn_rnn", "aten::_cudnn_rnn_backward",
})  # fmt: skip
"""Ops with no CPU kernel: skipped when profiling on the CPU."""

# Linear layers as (out_features, in_features) of models people train: GPT-2 (d=768, 1024),
# 2048-wide models, Llama-2-7B, Llama-3-8B (GQA qkv 4096+2*1024, vocab 128256), 13B (d=5120).
LINEAR_SHAPES = (
    (2304, 768), (768, 768), (3072, 768), (768, 3072), (50257, 768), (50304, 768),
    (3072, 1024), (1024, 1024), (4096, 1024), (1024, 4096),
    (6144, 2048), (2048, 2048), (8192, 2048), (2048, 8192),
    (12288, 4096), (4096, 4096), (11008, 4096), (4096, 11008), (32000, 4096),
    (6144, 4096), (14336, 4096), (4096, 14336), (128256, 4096),
    (15360, 5120), (5120, 5120), (13824, 5120), (5120, 13824),
)  # fmt: skip
"""(N, K) = (out_features, in_features) of common transformer linears."""

LINEAR_TOKENS = (256, 1024, 2048, 4096, 8192, 16384)
"""M: tokens per micro-batch (batch * sequence) feeding a linear."""

ODD_SIZES = (1, 3, 7, 33, 127, 768, 1000, 2304, 3072, 4095, 4097, 11008, 14336, 50257, 50304)
"""Sizes sampled besides powers of two: skinny, off-by-one, vocabularies, MLP widths."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ProfileCase:
    """One signature to time, encoded as a trace row would record it."""

    family: str
    """Op family, one of `FAMILIES`."""
    op: str
    """aten op name with overload unless default ("aten::addmm")."""
    input_shapes: tuple[tuple[int, ...], ...]
    """Shape of each tensor argument, in trace flattening order."""
    input_dtypes: tuple[str, ...]
    """dtype name of each tensor argument."""
    input_strides: tuple[tuple[int, ...], ...]
    """Strides (elements) of each tensor argument."""
    attrs: dict[str, Any]
    """{"args": [...], "kwargs": {...}} with tensors as {"$t": i}."""
    allow_tf32: bool = False
    """Whether TF32 is allowed for fp32 matmuls and convolutions while timing."""
    sleep_before: bool = False
    """Queue a GPU sleep before each timed run so a slow host launch is hidden (always, for the
    families in `profiler.SLEEP_FAMILIES`)."""


def make_case(family: str, op: str, args: Sequence[Any], kwargs: dict[str, Any] | None = None, **flags) -> ProfileCase:
    """Encode `op(*args, **kwargs)` (tensors as `TensorSpec`) into a `ProfileCase`."""
    args, kwargs = _strip_defaults(op, list(args), dict(kwargs or {}))
    attrs, shapes, dtypes, strides = encode_arguments(args, kwargs)
    return ProfileCase(
        family=family,
        op=op,
        input_shapes=tuple(map(tuple, shapes)),
        input_dtypes=tuple(dtypes),
        input_strides=tuple(map(tuple, strides)),
        attrs=attrs,
        **flags,
    )


def grid(family: str, *, quick: bool = False, seed: int = 0, part: str = "all") -> list[ProfileCase]:
    """The cases of one family.

    Args:
        family: one of `FAMILIES`.
        quick: a few tiny cases instead of the full grid.
        seed: seeds the random draws.
        part: "all" (the fixed grid, then `RANDOM_DRAWS[family]` random draws), "fixed", "random", or
            "cnn": only the fixed grid's CNN-layout cases (`_CNN_LAYOUT_GRIDS`; none for other families).

    Returns:
        The cases, in the order they will be timed.
    """
    if family not in _GRIDS:
        raise ValueError(f"unknown op family {family!r}; known: {', '.join(FAMILIES)}")
    if part not in ("all", "fixed", "random", "cnn"):
        raise ValueError(f"part must be 'all', 'fixed', 'random' or 'cnn', not {part!r}")
    if part == "cnn":
        return list(_CNN_LAYOUT_GRIDS[family]()) if family in _CNN_LAYOUT_GRIDS and not quick else []
    rng = random.Random(seed)
    cases = list(_GRIDS[family](quick, rng)) if part != "random" else []
    if part != "fixed" and not quick:
        cases += _RANDOM_GRIDS[family](random.Random(seed))
    return cases


def _strip_defaults(op: str, args: list, kwargs: dict) -> tuple[list, dict]:
    schema = resolve_op(op)._schema
    positional = [a for a in schema.arguments if not a.kwarg_only]
    by_name = {a.name: a for a in schema.arguments}
    while args and len(args) <= len(positional):
        arg = positional[len(args) - 1]
        if not (arg.has_default_value() and _same(args[-1], arg.default_value)):
            break
        args.pop()
    kept = {}
    for name, value in kwargs.items():
        arg = by_name.get(name)
        if arg is None or not (arg.has_default_value() and _same(value, arg.default_value)):
            kept[name] = value
    return args, kept


def _same(value: Any, default: Any) -> bool:
    if isinstance(value, TensorSpec) or type(value) is not type(default) and value is not None:
        return False
    return value == default


# ---------------------------------------------------------------------------------------------
# Tensor layouts.


def _spec(shape: Sequence[int], dtype: str, strides: Sequence[int] | None = None) -> TensorSpec:
    return TensorSpec(shape=tuple(shape), dtype=dtype, strides=tuple(strides) if strides else None)


def _transposed(shape: Sequence[int], dtype: str) -> TensorSpec:
    """A view `x.transpose(-1, -2)` of a contiguous tensor, seen with logical shape `shape`."""
    *batch, rows, cols = shape
    strides = [1, rows]
    if batch:
        strides = [rows * cols] + strides
    return _spec(shape, dtype, strides)


def channels_last_strides(n: int, c: int, h: int, w: int) -> tuple[int, ...]:
    """Strides (elements) of an [N, C, H, W] tensor in channels-last memory format."""
    return (h * w * c, 1, w * c, c)


def _image(shape: Sequence[int], dtype: str, channels_last: bool) -> TensorSpec:
    """An [N, C, H, W] tensor, contiguous or channels-last."""
    return _spec(shape, dtype, channels_last_strides(*shape) if channels_last else None)


def _heads_transposed(b: int, h: int, s: int, d: int, dtype: str) -> TensorSpec:
    """[B, H, S, D] as `x.view(B, S, H, D).transpose(1, 2)`: how attention modules build q, k, v."""
    return _spec((b, h, s, d), dtype, (s * h * d, d, h * d, 1))


def _nbytes(shape: Sequence[int], dtype: str) -> int:
    return math.prod(shape) * (4 if dtype == "float32" else 2 if dtype in ("bfloat16", "float16") else 8)


def _activation_shape(numel: int, width: int = 1024) -> tuple[int, ...]:
    return (numel // width, width) if numel >= width else (numel,)


# ---------------------------------------------------------------------------------------------
# GEMM: mm, addmm, bmm, baddbmm.

_GEMM_DTYPES = (("bfloat16", False), ("float16", False), ("float32", True), ("float32", False))


def _gemm(quick: bool, rng: random.Random) -> Iterator[ProfileCase]:
    if quick:
        yield from _linear_cases(64, 48, 32, "float32", False)
        yield make_case("gemm", "aten::bmm", [_spec((2, 16, 8), "float32"), _transposed((2, 8, 24), "float32")])
        yield make_case(
            "gemm", "aten::baddbmm",
            [_spec((2, 16, 24), "float32"), _spec((2, 16, 8), "float32"), _spec((2, 8, 24), "float32")],
            {"beta": 1.0, "alpha": 0.125},
        )  # fmt: skip
        return
    for dtype, tf32 in _GEMM_DTYPES:
        # bf16 gets every token count; other dtypes a subset, and fp32 without TF32 only small ones.
        tokens = LINEAR_TOKENS if dtype == "bfloat16" else (1024, 4096, 16384)
        max_flops = 4e13 if dtype != "float32" else (1e13 if tf32 else 1e12)
        for m in tokens:
            for n, k in LINEAR_SHAPES:
                if 2.0 * m * n * k <= max_flops and _nbytes((m, n), dtype) <= 4 * GIB:
                    yield from _linear_cases(m, n, k, dtype, tf32)
    yield from _bmm_cases()


def _random_size(rng: random.Random) -> int:
    if rng.random() < 0.3:
        return rng.choice(ODD_SIZES)
    return max(1, round(2 ** rng.uniform(0, 14)))


def _linear_cases(m: int, n: int, k: int, dtype: str, tf32: bool) -> Iterator[ProfileCase]:
    """The matmuls of `F.linear(x[M, K], W[N, K], b)` and its backward (autograd's mm_mat*_backward)."""
    w_t = _transposed((k, n), dtype)  # W.t(): [K, N], strides (1, K)
    yield make_case("gemm", "aten::addmm", [_spec((n,), dtype), _spec((m, k), dtype), w_t], allow_tf32=tf32)
    yield make_case("gemm", "aten::mm", [_spec((m, k), dtype), w_t], allow_tf32=tf32)
    # grad_input = grad[M, N] @ W[N, K]; grad_weight = grad.t()[N, M] @ x[M, K]
    yield make_case("gemm", "aten::mm", [_spec((m, n), dtype), _spec((n, k), dtype)], allow_tf32=tf32)
    yield make_case("gemm", "aten::mm", [_transposed((n, m), dtype), _spec((m, k), dtype)], allow_tf32=tf32)


def _bmm_cases() -> Iterator[ProfileCase]:
    """Eager attention (scores = q @ k^T, out = p @ v, HF baddbmm) and their backward layouts."""
    for dtype in ("bfloat16", "float32"):
        for bh in (32, 96, 256):
            for s in (128, 256, 512, 1024, 2048):
                for d in (64, 128):
                    if _nbytes((bh, s, s), dtype) > 2 * GIB:
                        continue
                    q, p = _spec((bh, s, d), dtype), _spec((bh, s, s), dtype)
                    tf32 = dtype == "float32"
                    yield make_case("gemm", "aten::bmm", [q, _transposed((bh, d, s), dtype)], allow_tf32=tf32)
                    yield make_case("gemm", "aten::bmm", [p, _spec((bh, s, d), dtype)], allow_tf32=tf32)
                    yield make_case("gemm", "aten::bmm", [_transposed((bh, s, s), dtype), q], allow_tf32=tf32)
                    yield make_case(
                        "gemm", "aten::baddbmm", [p, q, _transposed((bh, d, s), dtype)],
                        {"beta": 0.0, "alpha": 0.125}, allow_tf32=tf32,
                    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Convolutions.

# (Cin, H=W, Cout, kernel, stride, padding): ResNet-50 (torchvision v1.5), ResNet-18/34 basic
# blocks, and a ViT-B/16 patch embedding; inputs at 224x224.
CONV_LAYERS = (
    (3, 224, 64, 7, 2, 3),
    (64, 56, 64, 1, 1, 0), (64, 56, 64, 3, 1, 1), (64, 56, 256, 1, 1, 0), (256, 56, 64, 1, 1, 0),
    (256, 56, 128, 1, 1, 0), (128, 56, 128, 3, 2, 1), (128, 28, 512, 1, 1, 0), (256, 56, 512, 1, 2, 0),
    (512, 28, 128, 1, 1, 0), (128, 28, 128, 3, 1, 1),
    (512, 28, 256, 1, 1, 0), (256, 28, 256, 3, 2, 1), (256, 14, 1024, 1, 1, 0), (512, 28, 1024, 1, 2, 0),
    (1024, 14, 256, 1, 1, 0), (256, 14, 256, 3, 1, 1),
    (1024, 14, 512, 1, 1, 0), (512, 14, 512, 3, 2, 1), (512, 7, 2048, 1, 1, 0), (1024, 14, 2048, 1, 2, 0),
    (2048, 7, 512, 1, 1, 0), (512, 7, 512, 3, 1, 1),
    (64, 56, 128, 3, 2, 1), (64, 56, 128, 1, 2, 0), (128, 28, 256, 3, 2, 1), (256, 14, 512, 3, 2, 1),
    (3, 224, 768, 16, 16, 0),
)  # fmt: skip
"""(Cin, H, Cout, k, stride, padding) of common CNN layers."""


def _conv(quick: bool, rng: random.Random) -> Iterator[ProfileCase]:
    if quick:
        yield from _conv_cases(2, 8, 16, 16, 3, 1, 1, "float32", channels_last=False)
        yield from _conv_cases(2, 8, 16, 16, 3, 1, 1, "float32", channels_last=True)
        return
    for dtype, batches in (("bfloat16", (16, 64, 256)), ("float32", (16, 64, 256)), ("float16", (64,))):
        for n in batches:
            for cin, hw, cout, k, stride, pad in CONV_LAYERS:
                for channels_last in (False, True):
                    yield from _conv_cases(n, cin, hw, cout, k, stride, pad, dtype, channels_last)


def _conv_cases(
    n: int, cin: int, hw: int, cout: int, k: int, stride: int, pad: int, dtype: str, channels_last: bool,
    *, groups: int = 1, dilation: int = 1, bias: bool | None = None,
) -> Iterator[ProfileCase]:
    """Forward convolution and its backward, as autograd's ConvolutionBackward0 calls it."""
    ho = (hw + 2 * pad - dilation * (k - 1) - 1) // stride + 1
    first_layer = cin == 3  # the image does not require grad: no grad_input
    has_bias = k == 16 if bias is None else bias  # ViT patch embedding has a bias; ResNet convs do not

    def tensor(c: int, h: int) -> TensorSpec:
        return _image((n, c, h, h), dtype, channels_last)

    w_shape = (cout, cin // groups, k, k)
    weight = _image(w_shape, dtype, channels_last)
    bias_spec = _spec((cout,), dtype) if has_bias else None
    geometry = [[stride, stride], [pad, pad], [dilation, dilation], False, [0, 0], groups]
    tf32 = dtype == "float32"  # cuDNN allows TF32 by default
    yield make_case("conv", "aten::convolution", [tensor(cin, hw), weight, bias_spec, *geometry], allow_tf32=tf32)
    mask = [not first_layer, True, has_bias]
    yield make_case(
        "conv", "aten::convolution_backward",
        [tensor(cout, ho), tensor(cin, hw), weight, [cout] if has_bias else None, *geometry, mask],
        allow_tf32=tf32,
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Scaled dot-product attention: the fused ops F.scaled_dot_product_attention dispatches to.

SDPA_SEQ_LENS = (128, 256, 512, 1024, 2048, 4096, 8192)
"""Sequence lengths (tokens) for the attention grid."""

_SDPA_BACKENDS = ("cudnn", "flash", "efficient")


def _sdpa(quick: bool, rng: random.Random) -> Iterator[ProfileCase]:
    if quick:
        # The CPU flash kernel exercises the same forward-first replay as the CUDA backward ops.
        for backend in (*_SDPA_BACKENDS, "cpu"):
            yield from _sdpa_cases(backend, 1, 2, 2, 64, 16, True, "float32")
        return
    for dtype, configs in (
        ("bfloat16", ((12, 64, 8192), (12, 64, 32768), (16, 64, 16384),
                      (32, 128, 8192), (32, 128, 32768), (16, 128, 16384))),
        ("float16", ((12, 64, 8192), (32, 128, 8192))),
    ):  # fmt: skip
        for heads, head_dim, tokens in configs:
            for s in SDPA_SEQ_LENS:
                for causal in (False, True):
                    for backend in _SDPA_BACKENDS:
                        yield from _sdpa_cases(backend, max(1, tokens // s), heads, heads, s, head_dim, causal, dtype)
    # float32 (a model trained without autocast): of the fused backends only memory-efficient
    # attention takes it on CUDA (flash and cuDNN need 16-bit inputs).
    for heads, head_dim, tokens in ((12, 64, 8192), (16, 64, 16384), (32, 128, 8192)):
        for s in SDPA_SEQ_LENS:
            for causal in (False, True):
                yield from _sdpa_cases("efficient", max(1, tokens // s), heads, heads, s, head_dim, causal, "float32")
    # Grouped-query attention (Llama-3: 32 query heads, 8 KV heads): k/v passed with fewer heads.
    for s in (512, 2048, 8192):
        for backend in _SDPA_BACKENDS:
            yield from _sdpa_cases(backend, max(1, 16384 // s), 32, 8, s, 128, True, "bfloat16")


def _sdpa_cases(
    backend: str, b: int, h: int, h_kv: int, s: int, d: int, causal: bool, dtype: str
) -> Iterator[ProfileCase]:
    """Forward and backward of one attention backend; the backward's saved tensors are placeholders
    that the replay replaces with the forward's real outputs."""
    q = _heads_transposed(b, h, s, d, dtype)
    k = v = _heads_transposed(b, h_kv, s, d, dtype)
    grad, out = _heads_transposed(b, h, s, d, dtype), _heads_transposed(b, h, s, d, dtype)
    lse = _spec((b, h, s), "float32")
    seed, offset = _spec((), "int64"), _spec((), "int64")
    if backend == "cudnn":
        op = "aten::_scaled_dot_product_cudnn_attention"
        yield make_case("sdpa", op, [q, k, v, None, True, 0.0, causal, False])
        backward = [grad, q, k, v, out, lse, seed, offset, None, None, None, s, s, 0.0, causal]
    elif backend == "flash":
        op = "aten::_scaled_dot_product_flash_attention"
        yield make_case("sdpa", op, [q, k, v, 0.0, causal, False])
        backward = [grad, q, k, v, out, lse, None, None, s, s, 0.0, causal, seed, offset]
    elif backend == "efficient":
        op = "aten::_scaled_dot_product_efficient_attention"
        yield make_case("sdpa", op, [q, k, v, None, True, 0.0, causal])
        backward = [grad, q, k, v, None, out, lse, seed, offset, 0.0, [True, True, True, False], causal]
    else:
        op = "aten::_scaled_dot_product_flash_attention_for_cpu"
        yield make_case("sdpa", op, [q, k, v, 0.0, causal])
        backward = [grad, q, k, v, out, lse, 0.0, causal]
    yield make_case("sdpa", op + "_backward", backward)


# ---------------------------------------------------------------------------------------------
# Normalisation: layer norm, RMS norm, batch norm.

HIDDEN_SIZES = (768, 1024, 2048, 4096, 5120, 8192)
"""Transformer hidden sizes (the normalised dimension)."""


def _norm(quick: bool, rng: random.Random) -> Iterator[ProfileCase]:
    sizes = [(64, 32)] if quick else [(t, c) for c in HIDDEN_SIZES for t in (512, 2048, 8192, 32768)]
    dtypes = ("float32",) if quick else ("bfloat16", "float32")
    has_rms = hasattr(torch.ops.aten, "_fused_rms_norm")
    for dtype in dtypes:
        for tokens, c in sizes:
            b, s = max(1, tokens // 1024), min(tokens, 1024)
            x, w = _spec((b, s, c), dtype), _spec((c,), dtype)
            stat = _spec((b, s, 1), "float32")
            yield make_case("norm", "aten::native_layer_norm", [x, [c], w, w, 1e-5])
            yield make_case("norm", "aten::native_layer_norm_backward", [x, x, [c], stat, stat, w, w, [True] * 3])
            if has_rms:
                yield make_case("norm", "aten::_fused_rms_norm", [x, [c], w, 1e-6])
                yield make_case("norm", "aten::_fused_rms_norm_backward", [x, x, [c], stat, w, [True, True]])
    yield from _batchnorm(quick)
    if not quick:
        yield from _cnn_layout_norms()


# (C, H=W) of ResNet-50 batch-norm inputs at 224x224.
BATCHNORM_SHAPES = ((64, 112), (64, 56), (256, 56), (128, 28), (512, 28), (256, 14), (1024, 14), (512, 7), (2048, 7))


BATCH_NORM_OPS = ("aten::cudnn_batch_norm", "aten::cudnn_batch_norm_backward", "aten::native_batch_norm",
                  "aten::native_batch_norm_backward", "aten::_batch_norm_with_update", "aten::batch_norm_backward")
"""Every op PyTorch versions dispatch a training-mode batch norm to, forward and backward."""


def _batch_norm_cases(x: TensorSpec, ops: Sequence[str] = BATCH_NORM_OPS) -> Iterator[ProfileCase]:
    """Training-mode batch norm of the [N, C, H, W] input `x` through each of `ops`, in that order,
    with float32 parameters and statistics (as AMP keeps them)."""
    p, reserve = _spec((x.shape[1],), "float32"), _spec((0,), "uint8")
    args = {
        "aten::cudnn_batch_norm": [x, p, p, p, p, True, 0.1, 1e-5],
        "aten::cudnn_batch_norm_backward": [x, x, p, p, p, p, p, 1e-5, reserve],
        "aten::native_batch_norm": [x, p, p, p, p, True, 0.1, 1e-5],
        "aten::native_batch_norm_backward": [x, x, p, p, p, p, p, True, 1e-5, [True] * 3],
        "aten::_batch_norm_with_update": [x, p, p, p, p, 0.1, 1e-5],
        "aten::batch_norm_backward": [x, x, p, p, p, p, p, True, 1e-5, [True] * 3, reserve],
    }
    for op in ops:
        yield make_case("norm", op, args[op])


def _batchnorm(quick: bool) -> Iterator[ProfileCase]:
    """Batch norm forward and backward through each op PyTorch versions dispatch to (family "norm")."""
    shapes = [(4, 8)] if quick else BATCHNORM_SHAPES
    n = 2 if quick else 64
    for dtype in ("float32",) if quick else ("bfloat16", "float32"):
        for c, hw in shapes:
            for channels_last in (False, True):
                yield from _batch_norm_cases(_image((n, c, hw, hw), dtype, channels_last))


# ---------------------------------------------------------------------------------------------
# Softmax and the cross-entropy tail (log_softmax + nll_loss).

VOCAB_SIZES = (32000, 50257, 50304, 128256)
"""Vocabulary sizes of common language models."""


def _softmax(quick: bool, rng: random.Random) -> Iterator[ProfileCase]:
    rows = [(16, 50)] if quick else [(t, v) for v in VOCAB_SIZES for t in (512, 2048, 8192, 16384)]
    for dtype in ("float32",) if quick else ("float32", "bfloat16"):
        for t, v in rows:
            if _nbytes((t, v), dtype) > 4 * GIB:
                continue
            logits = _spec((t, v), dtype)
            yield make_case("softmax", "aten::_log_softmax", [logits, 1, False])
            yield make_case(
                "softmax", "aten::_log_softmax_backward_data", [logits, logits, 1, getattr(torch, dtype)]
            )
            target, scalar = _spec((t,), "int64"), _spec((), dtype)
            yield make_case("softmax", "aten::nll_loss_forward", [logits, target, None, 1, -100])
            yield make_case("softmax", "aten::nll_loss_backward", [scalar, logits, target, None, 1, -100, scalar])
    scores = [(2, 2, 8)] if quick else [(bh, s, s) for bh in (96, 256) for s in (128, 512, 1024, 2048)]
    for dtype in ("float32",) if quick else ("bfloat16", "float32"):
        for shape in scores:
            x = _spec(shape, dtype)
            yield make_case("softmax", "aten::_softmax", [x, -1, False])
            yield make_case("softmax", "aten::_softmax_backward_data", [x, x, -1, getattr(torch, dtype)])


def _embedding(quick: bool, rng: random.Random) -> Iterator[ProfileCase]:
    configs = [(100, 16, 32)] if quick else [
        (v, c, t) for v in (32000, 50304, 128256) for c in (768, 4096) for t in (2048, 8192, 32768)
    ]  # fmt: skip
    for dtype in ("float32",) if quick else ("bfloat16", "float32"):
        for v, c, tokens in configs:
            b, s = max(1, tokens // 1024), min(tokens, 1024)
            idx = _spec((b, s), "int64")
            yield make_case("embedding", "aten::embedding", [_spec((v, c), dtype), idx])
            yield make_case("embedding", "aten::embedding_dense_backward", [_spec((b, s, c), dtype), idx, v, -1, False])
    yield from _embedding_bag(quick)


EMBEDDING_BAG_CONFIGS = tuple(
    (rows, dim, bags, per_bag)
    for rows in (10_000, 200_000, 1_000_000) for dim in (32, 128) for bags in (1024, 4096, 16384) for per_bag in (1, 4, 32)
)  # fmt: skip
"""(rows, dim, bags, lookups per bag) of `nn.EmbeddingBag` tables: recommendation models (DLRM,
Naumov et al. 2019: 26 Criteo tables, 4096-sample batches, tens of dims) from small to 1M rows."""


def _embedding_bag(quick: bool) -> Iterator[ProfileCase]:
    # _embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights)
    # and its dense backward (grad, indices, offsets, offset2bag, bag_size, max_indices, num_weights,
    # scale_grad_by_freq, mode, sparse, per_sample_weights), encoded as a trace of nn.EmbeddingBag
    # records them: the default flags up to per_sample_weights stay (they come from C++ positionally).
    def as_recorded(op: str, args: list) -> ProfileCase:
        attrs, shapes, dtypes, strides = encode_arguments(args, {})
        return ProfileCase(family="embedding", op=op, input_shapes=tuple(map(tuple, shapes)),
                           input_dtypes=tuple(dtypes), input_strides=tuple(map(tuple, strides)), attrs=attrs)

    configs = [(100, 16, 8, 4)] if quick else EMBEDDING_BAG_CONFIGS
    for dtype in ("float32",) if quick else ("float32", "bfloat16"):
        for rows, dim, bags, per_bag in configs:
            if dtype != "float32" and dim != 128:
                continue
            for mode in (0,) if quick or per_bag != 4 else (0, 1):  # sum; mean at 4 lookups per bag
                idx, offsets = _spec((bags * per_bag,), "int64"), _spec((bags,), "int64")
                yield as_recorded("aten::_embedding_bag", [_spec((rows, dim), dtype), idx, offsets, False, mode, False, None])
                yield as_recorded("aten::_embedding_bag_backward", [
                    _spec((bags, dim), dtype), idx, offsets, idx, offsets, _spec((0,), "int64"), rows, False, mode, False, None,
                ])  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Elementwise, reductions, copies: memory-bound ops from 1 element to 2 GiB.


def _sizes(quick: bool, dtype: str) -> list[int]:
    if quick:
        return [1, 1000]
    return [4**k for k in range(16) if 4**k * (4 if dtype == "float32" else 2) <= 2 * GIB]


def _elementwise_calls(x: TensorSpec, cond: TensorSpec) -> list[tuple[str, list, dict]]:
    """(op, args, kwargs) of the elementwise ops training scripts issue most, on input `x`."""
    return [
        ("aten::add.Tensor", [x, x], {}),
        ("aten::add_.Tensor", [x, x], {}),
        ("aten::mul.Tensor", [x, x], {}),
        ("aten::div.Tensor", [x, x], {}),
        ("aten::mul.Scalar", [x, 0.5], {}),
        ("aten::neg", [x], {}),
        ("aten::pow.Tensor_Scalar", [x, 2], {}),
        ("aten::gelu", [x], {}),
        ("aten::gelu", [x], {"approximate": "tanh"}),
        ("aten::gelu_backward", [x, x], {}),
        ("aten::silu", [x], {}),
        ("aten::silu_backward", [x, x], {}),
        ("aten::relu", [x], {}),
        ("aten::threshold_backward", [x, x, 0], {}),
        ("aten::sigmoid", [x], {}),
        ("aten::tanh", [x], {}),
        ("aten::rsqrt", [x], {}),
        ("aten::fill_.Scalar", [x, 0.0], {}),
        ("aten::zero_", [x], {}),
        ("aten::where.self", [cond, x, x], {}),
        ("aten::native_dropout", [x, 0.1, True], {}),
    ]


def _factory_calls(shape: tuple[int, ...], dtype: str) -> list[tuple[str, list, dict]]:
    """(op, args, kwargs) of the ops that fill a new or existing tensor of `shape` without reading one:
    `torch.zeros`/`ones`/`full` and the random generators, as scripts make noise, masks and token
    batches on the GPU (a trace records the factories with no tensor input). Timed on the H200 in
    session 23 (`benchmarks/gpu/session23_h200/s23a/elementwise/`) but not shipped: refitting the
    elementwise model with them made its in-training pairs worse (benchmarks/calibrate.py, see
    fit_choices_h200.md), so `families.OP_FAMILIES` leaves the factories to roofline, and
    `normal_` / `uniform_`, in the elementwise family already, are estimated from the other ops' rows.
    `randint` makes int64 whatever `dtype` is, so it comes with float32 only (once per shape)."""
    new = {"dtype": getattr(torch, dtype), "device": torch.device("cuda")}
    x = _spec(shape, dtype)
    calls = [
        ("aten::zeros", [list(shape)], new),
        ("aten::ones", [list(shape)], new),
        ("aten::full", [list(shape), 0.5], new),
        ("aten::randn", [list(shape)], new),
        ("aten::rand", [list(shape)], new),
        ("aten::normal_", [x], {}),
        ("aten::uniform_", [x], {}),
    ]
    if dtype == "float32":
        calls.append(("aten::randint.low", [0, 50257, list(shape)], {"device": torch.device("cuda")}))
    return calls


def _elementwise(quick: bool, rng: random.Random) -> Iterator[ProfileCase]:
    for dtype in ("float32",) if quick else ("bfloat16", "float32"):
        for numel in _sizes(quick, dtype):
            x = _spec(_activation_shape(numel), dtype)
            cond = _spec(_activation_shape(numel), "bool")
            for op, args, kwargs in _elementwise_calls(x, cond) + _factory_calls(x.shape, dtype):
                yield make_case("elementwise", op, args, kwargs)
            if numel >= 1024:  # bias add: [T, C] + [C]
                yield make_case("elementwise", "aten::add.Tensor", [x, _spec((x.shape[-1],), dtype)])
    yield from _token_cases(quick)


def _token_cases(quick: bool) -> Iterator[ProfileCase]:
    """Integer ops of generation loops over token ids: beam search's `topk_indices // vocab_size`
    (`floor_divide` by a 0-d tensor, as a Python divisor reaches the op) and the end-of-sequence check
    `isin(tokens, eos_ids)`, from one token to 16M. Added in session 29 and profiled in session 31
    (benchmarks/gpu/session31_h200/s31a/tokens_elementwise.parquet), not shipped: with these rows the
    elementwise model fitted the other ops worse (benchmarks/results/fit_choices_h200.md), so no family
    maps them."""
    for numel in [1, 1000] if quick else [4**k for k in range(13)]:
        tokens = _spec((numel,), "int64")
        yield make_case("elementwise", "aten::floor_divide", [tokens, _spec((), "int64")])
        yield make_case("elementwise", "aten::isin.Tensor_Tensor", [tokens, _spec((2,), "int64")])


def _reduction(quick: bool, rng: random.Random) -> Iterator[ProfileCase]:
    for dtype in ("float32",) if quick else ("bfloat16", "float32"):
        for numel in _sizes(quick, dtype):
            x = _spec(_activation_shape(numel, 4096), dtype)
            yield make_case("reduction", "aten::sum.dim_IntList", [x, [0]])  # bias gradient
            yield make_case("reduction", "aten::sum.dim_IntList", [x, [-1], True])
            yield make_case("reduction", "aten::mean.dim", [x, [-1], True])
            yield make_case("reduction", "aten::amax", [x, [-1], True])
            yield make_case("reduction", "aten::sum", [x])
            yield make_case("reduction", "aten::mean", [x])
    if not quick:
        # The bias gradients of a language model's linear layers, as autograd sums them: tokens x
        # width, over the tokens, keepdim. A column sum's speed depends on its width, which the sizes
        # above hold at 4096 (HF BERT's [16384, 768] ones took 31 us each on the H200 against 27 us
        # estimated: `python benchmarks/calibration_report.py --shapes
        # benchmarks/gpu/session16_h200/s16a/op_shapes hf_bert_bf16`).
        for dtype in ("bfloat16", "float32"):
            for tokens in (2048, 8192, 16384, 32768):
                for width in (768, 1024, 1536, 2048, 2304, 3072, 4096, 4608, 6144, 8192):
                    yield make_case("reduction", "aten::sum.dim_IntList", [_spec((tokens, width), dtype), [0], True])
        yield from _cnn_layout_reductions()


def _copy(quick: bool, rng: random.Random) -> Iterator[ProfileCase]:
    for numel in _sizes(quick, "float32"):
        shape = _activation_shape(numel)
        f32, bf16 = _spec(shape, "float32"), _spec(shape, "bfloat16")
        yield make_case("copy", "aten::_to_copy", [f32], {"dtype": torch.bfloat16})
        yield make_case("copy", "aten::_to_copy", [bf16], {"dtype": torch.float32})
        yield make_case("copy", "aten::copy_", [bf16, f32])
        for dtype in ("float32",) if quick else ("bfloat16", "float32"):
            x = _spec(shape, dtype)
            yield make_case("copy", "aten::copy_", [x, x])
            yield make_case("copy", "aten::clone", [x])
            if len(shape) == 2:  # x.t().contiguous(): a transposing copy
                contiguous = {"memory_format": torch.contiguous_format}
                yield make_case("copy", "aten::clone", [_transposed(shape, dtype)], contiguous)
    if not quick:
        yield from _concat_cases()
        yield from _cnn_layout_copies()


def _concat_cases() -> Iterator[ProfileCase]:
    """`cat` and `stack` of attention-shaped [b, h, s, d] tensors as language models issue them, in the
    layouts their traces record: RoPE's rotate_half concatenates two half-width slices, and the
    backward of `unbind` stacks q, k and v; contiguous, heads-transposed (memory [b, s, h, d]) or a
    slice of either. Then concatenations of contiguous [rows, width] blocks along each dim."""
    for dtype in ("bfloat16", "float32"):
        for b, h, s, d in ((16, 12, 1024, 64), (16, 4, 1024, 64), (4, 24, 2048, 128), (64, 12, 197, 64),
                           (8, 32, 2048, 128), (2, 16, 4096, 64)):
            plain, heads_transposed = [h * s * d, s * d, d, 1], [s * h * d, d, h * d, 1]
            half = (b, h, s, d // 2)
            for strides in (None, plain, heads_transposed):  # whole halves, or slices of a parent
                yield make_case("copy", "aten::cat", [[_spec(half, dtype, strides) for _ in range(2)], -1])
            for strides in (None, heads_transposed):
                yield make_case("copy", "aten::stack", [[_spec((b, h, s, d), dtype, strides) for _ in range(3)]])
        for rows, width, parts in ((4096, 1024, 2), (16384, 768, 3), (8192, 4096, 2), (4096, 128, 27)):
            for dim in (0, 1):
                yield make_case("copy", "aten::cat", [[_spec((rows, width), dtype) for _ in range(parts)], dim])


CNN_ACTIVATIONS = (
    (64, 3, 224, 224), (96, 3, 160, 160), (64, 64, 112, 112), (64, 256, 56, 56), (96, 256, 40, 40),
    (64, 512, 28, 28), (96, 512, 20, 20), (64, 1024, 14, 14), (64, 2048, 7, 7), (96, 2048, 5, 5),
    (32, 128, 64, 64), (16, 320, 32, 32),
)
"""[N, C, H, W] activations of the CNN-layout cases: ResNet-50's input images and stage outputs at 224
and 160 px (the calibration workloads' batch sizes, 64 and 96) and two U-Net-like feature maps."""

CNN_WEIGHTS = ((64, 3, 7, 7), (64, 64, 3, 3), (256, 64, 1, 1), (128, 128, 3, 3), (1024, 256, 1, 1),
               (512, 512, 3, 3), (2048, 512, 1, 1), (512, 2048, 1, 1))
"""[Cout, Cin, kH, kW] convolution weights (ResNet-50's), which autocast casts to bf16 every step."""


def _cnn_layout_copies() -> Iterator[ProfileCase]:
    """Copies of 4-D tensors in both memory formats: the copy grid's other tensors have one or two
    dims (and attention's four), so a CNN's were estimated from shapes no profile had (the ResNet-50
    calibration workloads' traces hold autocast's weight casts and the input's layout conversion)."""
    for shape in CNN_WEIGHTS:
        for channels_last in (False, True):
            yield make_case("copy", "aten::_to_copy", [_image(shape, "float32", channels_last)], {"dtype": torch.bfloat16})
    for dtype in ("bfloat16", "float32"):
        for shape in CNN_ACTIVATIONS:
            for channels_last in (False, True):
                yield from _cnn_copy_cases(shape, dtype, channels_last)


def _cnn_copy_cases(shape: Sequence[int], dtype: str, channels_last: bool) -> Iterator[ProfileCase]:
    """A cast that keeps the layout (`x.to(other dtype)`), and the conversions to the other memory
    format as a script writes them: `x.to(memory_format=...)` and `x.contiguous(memory_format=...)`."""
    x = _image(shape, dtype, channels_last)
    yield make_case("copy", "aten::_to_copy", [x], {"dtype": torch.float32 if dtype == "bfloat16" else torch.bfloat16})
    target = torch.contiguous_format if channels_last else torch.channels_last
    yield make_case("copy", "aten::_to_copy", [x], {"memory_format": target})
    yield make_case("copy", "aten::clone", [x], {"memory_format": target})


CNN_RESAMPLE_RANDOM_SHAPES = 13
"""Random [N, C, H, W] feature maps, beside `CNN_ACTIVATIONS`, that the resampling cases run on."""


def _cnn_resample_cases() -> Iterator[ProfileCase]:
    """Resampling of [N, C, H, W] feature maps, forward and backward, as U-Nets, FPNs and
    segmentation heads issue them: nearest and bilinear 2x upsampling (`F.interpolate(x,
    scale_factor=2)`, `nn.Upsample`) and adaptive average pooling to 7x7 (the global 1x1 one is a
    `mean`, in the reduction grid), in both memory formats, bfloat16 and float32. No profile had
    timed them before session 36 (the copy model guessed the forwards, roofline the backwards);
    they are the pool family's, whose model learns a window op's time per byte.
    Every feature map whose float32 2x upsample fits in 512 MiB: `CNN_ACTIVATIONS` (less the
    3-channel images), then `CNN_RESAMPLE_RANDOM_SHAPES` drawn from a fixed seed."""

    def fits(shape: tuple[int, ...]) -> bool:
        n, c, h, w = shape
        return _nbytes((n, c, 2 * h, 2 * w), "float32") <= GIB // 2

    rng = random.Random(2036)
    drawn: list[tuple[int, ...]] = []
    while len(drawn) < CNN_RESAMPLE_RANDOM_SHAPES:
        shape = (_log_uniform(rng, 1, 128), _log_uniform(rng, 16, 1024, 8), *[_log_uniform(rng, 4, 96)] * 2)
        if fits(shape):
            drawn.append(shape)
    for n, c, h, w in [s for s in CNN_ACTIVATIONS if s[1] > 3 and fits(s)] + drawn:
        for dtype in ("bfloat16", "float32"):
            for channels_last in (False, True):
                x = _image((n, c, h, w), dtype, channels_last)
                up = _image((n, c, 2 * h, 2 * w), dtype, channels_last)
                size, in_size = [2 * h, 2 * w], [n, c, h, w]
                yield make_case("pool", "aten::upsample_nearest2d", [x, size, 2.0, 2.0])
                yield make_case("pool", "aten::upsample_nearest2d_backward", [up, size, in_size, 2.0, 2.0])
                yield make_case("pool", "aten::upsample_bilinear2d", [x, size, False, 2.0, 2.0])
                yield make_case("pool", "aten::upsample_bilinear2d_backward", [up, size, in_size, False, 2.0, 2.0])
                if h >= 7 and w >= 7:
                    yield make_case("pool", "aten::_adaptive_avg_pool2d", [x, [7, 7]])
                    pooled = _image((n, c, 7, 7), dtype, channels_last)
                    yield make_case("pool", "aten::_adaptive_avg_pool2d_backward", [pooled, x])


def _cnn_layout_reductions() -> Iterator[ProfileCase]:
    """Reductions of [N, C, H, W] activations in both memory formats."""
    for dtype in ("bfloat16", "float32"):
        for shape in CNN_ACTIVATIONS:
            for channels_last in (False, True):
                yield from _cnn_reduction_cases(shape, dtype, channels_last)


def _cnn_reduction_cases(shape: Sequence[int], dtype: str, channels_last: bool) -> Iterator[ProfileCase]:
    """Global average pooling (`x.mean((-1, -2), keepdim=True)`) and a per-channel sum (over N, H and
    W, as a convolution's bias gradient)."""
    x = _image(shape, dtype, channels_last)
    yield make_case("reduction", "aten::mean.dim", [x, [-1, -2], True])
    yield make_case("reduction", "aten::sum.dim_IntList", [x, [0, 2, 3]])


MOBILENET_ACTIVATIONS = (
    (128, 32, 112, 112), (128, 96, 112, 112), (128, 144, 56, 56), (128, 192, 28, 28), (128, 384, 14, 14),
    (128, 576, 14, 14), (128, 960, 7, 7), (128, 1280, 7, 7),
)
"""[N, C, H, W] batch-norm inputs of MobileNetV2 at 224 px and batch 128 (the calibration workload's)."""

GROUP_NORM_ACTIVATIONS = (
    (8, 128, 64, 64), (16, 256, 32, 32), (32, 64, 64, 64), (16, 512, 32, 32), (32, 320, 32, 32), (8, 640, 16, 16),
    (128, 128, 16, 16), (4, 256, 128, 128), (32, 1280, 8, 8),
)
"""[N, C, H, W] group-norm inputs (32 groups) over the feature maps of diffusion U-Nets and the like. Not
the held-out `unet_ddpm_bf16` workload's own (batch 64: benchmarks/validation/suite.py): session 22's
grid had three of them, (64, 128, 32, 32), (64, 256, 16, 16) and (64, 512, 8, 8), dropped in session
24 from the grid and the shipped rows (`norm_cnn_layouts.parquet`)."""

CHANNEL_LAYER_NORM_ACTIVATIONS = (
    (32, 96, 56, 56), (128, 64, 56, 56), (8, 96, 112, 112), (128, 192, 28, 28), (32, 128, 64, 64),
    (16, 256, 32, 32), (128, 384, 14, 14), (64, 512, 16, 16), (256, 768, 7, 7), (32, 1024, 8, 8),
)
"""[N, C, H, W] activations whose channels a layer norm normalises in their NHWC view (ConvNeXt- and
Swin-style blocks): widths below the transformer grid's, over many more positions. Not ConvNeXt-T's
stages at batch 64, the held-out `convnext_tiny_bf16` workload's shapes (benchmarks/validation/suite.py):
session 23's profile timed them, and they were dropped before it was shipped."""

CNN_NORM_RANDOM_SHAPES = 24
"""Random [N, C, H, W] shapes, beside the fixed ones, that each CNN normalisation is timed at (the
channel layer norms at the first half of them)."""


def _cnn_layout_norms() -> Iterator[ProfileCase]:
    """Batch, group and channel layer norms of [N, C, H, W] activations, forward and backward, as a
    CNN's training step records them: the norm grid's other batch-norm cases are ResNet-50's shapes
    at batch 64 (`BATCHNORM_SHAPES`), no profile had a group norm, and its layer norms are a
    transformer's (contiguous, 768 wide or more). Batch norm in both memory formats, on a bfloat16
    activation with float32 parameters (autocast) and all float32 (cuDNN's kernels); group norm on a
    contiguous tensor (CUDA makes its input contiguous first) in float32 (what autocast runs it in)
    and bfloat16; layer norm over the channels of the NHWC view (`_channel_layer_norm_cases`). Fixed
    shapes, then `CNN_NORM_RANDOM_SHAPES` drawn from a fixed seed."""
    rng = random.Random(2026)
    random_shapes = []
    while len(random_shapes) < CNN_NORM_RANDOM_SHAPES:
        shape = (_log_uniform(rng, 2, 256), _log_uniform(rng, 16, 2048, 8), *[_log_uniform(rng, 4, 128)] * 2)
        if _nbytes(shape, "float32") <= GIB:
            random_shapes.append(shape)
    for shape in (*[s for s in CNN_ACTIVATIONS if s[1] > 3], *MOBILENET_ACTIVATIONS, *random_shapes):
        for channels_last in (False, True):
            yield from _cnn_batch_norm_cases(shape, "bfloat16", channels_last)
            yield from _cnn_batch_norm_cases(shape, "float32", channels_last)
    for shape in (*GROUP_NORM_ACTIVATIONS, *random_shapes):
        groups = 32 if shape[1] % 32 == 0 else 8
        for dtype in ("float32", "bfloat16"):
            yield from _group_norm_cases(shape, dtype, groups)
    for shape in (*CHANNEL_LAYER_NORM_ACTIVATIONS, *random_shapes[: CNN_NORM_RANDOM_SHAPES // 2]):
        for dtype in ("float32", "bfloat16"):
            for permuted in (True, False):
                yield from _channel_layer_norm_cases(shape, dtype, permuted)


def _cnn_batch_norm_cases(shape: Sequence[int], dtype: str, channels_last: bool) -> Iterator[ProfileCase]:
    """Training-mode batch norm forward and backward with float32 parameters: cuDNN's ops on a
    float32 input, the native ones on a bfloat16 input (cuDNN's take no bfloat16 input)."""
    ops = BATCH_NORM_OPS[:2] if dtype == "float32" else BATCH_NORM_OPS[2:4]
    yield from _batch_norm_cases(_image(shape, dtype, channels_last), ops)


def _channel_layer_norm_cases(shape: Sequence[int], dtype: str, permuted: bool) -> Iterator[ProfileCase]:
    """Layer norm forward and backward over the channels of an [N, C, H, W] activation's NHWC view,
    `x.permute(0, 2, 3, 1)`: a permutation of an NCHW tensor (CUDA's kernels copy it contiguous
    first, inside the op; since 2026-12-06 the emulator records that copy as a clone of its own,
    `maya.emulator.operand_copies`, and the op on the contiguous copy, so traces carry the permuted
    case no more, and its profiled rows remain training data) or a contiguous channels-last one;
    parameters in the input's dtype (float32
    under autocast, which runs layer norm in float32), statistics in float32."""
    n, c, h, w = shape
    x = _spec((n, h, w, c), dtype, (c * h * w, w, 1, h * w) if permuted else None)
    grad, p, stat = _spec((n, h, w, c), dtype), _spec((c,), dtype), _spec((n, h, w, 1), "float32")
    yield make_case("norm", "aten::native_layer_norm", [x, [c], p, p, 1e-5])
    yield make_case("norm", "aten::native_layer_norm_backward", [grad, x, [c], stat, stat, p, p, [True] * 3])


def _group_norm_cases(shape: Sequence[int], dtype: str, groups: int) -> Iterator[ProfileCase]:
    """Group norm forward and backward of a contiguous [N, C, H, W] tensor, parameters in its dtype."""
    n, c = shape[0], shape[1]
    hw = math.prod(shape[2:])
    x, p, stat = _spec(shape, dtype), _spec((c,), dtype), _spec((n, groups), dtype)
    yield make_case("norm", "aten::native_group_norm", [x, p, p, n, c, hw, groups, 1e-5])
    yield make_case("norm", "aten::native_group_norm_backward", [x, x, stat, stat, p, n, c, hw, groups, [True] * 3])


def _pool(quick: bool, rng: random.Random) -> Iterator[ProfileCase]:
    """CNN pooling: ResNet's 3x3 stride-2 max pool on its stem, U-Net's and VGG's 2x2, at the batch
    sizes and image sides of training."""
    sides = ((2, 16, 8),) if quick else ((32, 64, 112), (96, 64, 80), (256, 64, 56), (16, 128, 64), (16, 256, 32))
    for dtype in ("float32",) if quick else ("bfloat16", "float32"):
        for n, c, side in sides:
            for channels_last in (False,) if quick else (False, True):
                for kernel, stride, padding in POOL_WINDOWS[:2]:
                    yield from _pool_cases("max", n, c, side, dtype, channels_last, kernel, stride, padding)
                yield from _pool_cases("avg", n, c, side, dtype, channels_last, 2, 2, 0)
    if not quick:
        yield from _cnn_resample_cases()


POOL_WINDOWS = ((3, 2, 1), (2, 2, 0), (3, 1, 1))
"""(kernel, stride, padding) of the pooling cases: ResNet's stem, a halving 2x2, Inception's 3x3 stride 1."""


def _pool_cases(
    kind: str, n: int, c: int, side: int, dtype: str, channels_last: bool, kernel: int, stride: int, padding: int
) -> Iterator[ProfileCase]:
    """2-D max or average pooling of an [n, c, side, side] input, forward and backward, both tensors in
    one memory format (the backward's indices come from running the forward first)."""
    out = (side + 2 * padding - kernel) // stride + 1
    if out < 1:
        return
    x, grad = _image((n, c, side, side), dtype, channels_last), _image((n, c, out, out), dtype, channels_last)
    window = [[kernel] * 2, [stride] * 2, [padding] * 2]
    if kind == "max":
        yield make_case("pool", "aten::max_pool2d_with_indices", [x, *window])
        indices = _spec(grad.shape, "int64", grad.strides)
        yield make_case("pool", "aten::max_pool2d_with_indices_backward", [grad, x, *window, [1, 1], False, indices])
    else:
        yield make_case("pool", "aten::avg_pool2d", [x, *window])
        yield make_case("pool", "aten::avg_pool2d_backward", [grad, x, *window, False, True, None])


# ---------------------------------------------------------------------------------------------
# Foreach and fused optimizer ops over parameter lists.


def _model_param_numels(d: int, layers: int, vocab: int, mlp: int) -> list[int]:
    """Parameter sizes of a GPT-style model, in the order optimizers see them."""
    per_layer = [d, d, 3 * d * d, 3 * d, d * d, d, d, d, mlp * d, mlp, d * mlp, d]
    return [vocab * d, 1024 * d] + per_layer * layers + [d, d]


def _param_lists(quick: bool) -> list[list[int]]:
    if quick:
        return [[16, 100, 7]]
    uniform = [
        [numel] * n
        for n in (1, 8, 64, 256, 1024)
        for numel in (256, 16384, 1 << 20, 1 << 22)
        if n * numel <= 1 << 28
    ]
    return uniform + [_model_param_numels(768, 12, 50304, 3072), _model_param_numels(2048, 4, 32000, 8192)]


def _foreach(quick: bool, rng: random.Random) -> Iterator[ProfileCase]:
    scalar = _spec((), "float32")  # GradScaler's scale, inverse scale and non-finite flag
    for dtype in ("float32",) if quick else ("float32", "bfloat16"):
        lists = _param_lists(quick)
        if dtype == "bfloat16":
            lists = lists[::3]
        if not quick:
            # A 3B-parameter model's optimizer lists (Llama-3.2-3B-like, 2.9G elements): with lists of
            # at most 268M elements to learn from, the model put llama_3b_bf16_ckpt's foreach ops at
            # 1.1-2.2x their measured time (`python benchmarks/calibrate.py --pairs foreach`, session 17).
            lists = [*lists, _model_param_numels(3072, 28, 128256, 8192)]
        for numels in lists:
            params = [_spec((n,), dtype) for n in numels]
            grads = [_spec((n,), dtype) for n in numels]
            moments = [_spec((n,), dtype) for n in numels]
            scalars = [0.5] * len(numels)
            for op, args in (
                ("aten::_foreach_add_.List", [params, grads]),  # gradient accumulation
                ("aten::_foreach_mul_.Scalar", [params, 0.99]),
                ("aten::_foreach_add_.Scalar", [params, 1e-8]),
                ("aten::_foreach_lerp_.Scalar", [params, grads, 0.1]),
                ("aten::_foreach_addcmul_.Scalar", [params, grads, grads, 0.001]),
                ("aten::_foreach_addcdiv_.ScalarList", [params, grads, moments, scalars]),
                ("aten::_foreach_div_.ScalarList", [params, scalars]),
                ("aten::_foreach_sqrt", [params]),
                ("aten::_foreach_norm.Scalar", [grads]),  # clip_grad_norm_
                # clip_grad_norm_'s coefficient has the grads' dtype; a float32 one with bf16 grads
                # leaves the fused path (2.9 ms for 1,024 tiny tensors) and no training step does it.
                ("aten::_foreach_mul_.Tensor", [grads, _spec((), dtype)]),
            ):
                yield make_case("foreach", op, args)
            steps = [_spec((), "float32") for _ in numels]
            hyper = {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "weight_decay": 0.01, "eps": 1e-8,
                     "amsgrad": False, "maximize": False}  # fmt: skip
            for op in ("aten::_fused_adamw_", "aten::_fused_adam_"):
                yield make_case("foreach", op, [params, grads, moments, moments, [], steps], hyper)
            if dtype == "float32":
                # torch.amp.GradScaler.unscale_: one foreach kernel divides every gradient by the scale
                # and flags non-finite ones; the inverse scale and the flag are 0-d float32 tensors. Its
                # CUDA kernel takes float32 and float16 gradients only (bfloat16: NotImplementedError on
                # the H200, torch 2.11), and GradScaler refuses float16 ones: AMP's gradients are float32.
                yield make_case("foreach", "aten::_amp_foreach_non_finite_check_and_unscale_", [grads, scalar, scalar])
    # GradScaler.update: one one-element kernel grows or backs off the scale (a 0-d float32 tensor; its
    # growth tracker is a 0-d int32 one), whatever the model (torch/amp/grad_scaler.py).
    yield make_case("foreach", "aten::_amp_update_scale_", [scalar, _spec((), "int32"), scalar, 2.0, 0.5, 2000])


# ---------------------------------------------------------------------------------------------
# Indexing: gather/scatter-style ops.


def _index(quick: bool, rng: random.Random) -> Iterator[ProfileCase]:
    configs = [(50, 8, 16)] if quick else [
        (v, c, n) for v in (1024, 50304) for c in (64, 768, 4096) for n in (256, 4096, 65536)
    ]  # fmt: skip
    for dtype in ("float32",) if quick else ("bfloat16", "float32"):
        for v, c, n in configs:
            table, rows = _spec((v, c), dtype), _spec((n, c), dtype)
            idx = _spec((n,), "int64")
            yield make_case("index", "aten::index_select", [table, 0, idx])
            yield make_case("index", "aten::index.Tensor", [table, [idx]])
            yield make_case("index", "aten::index_add", [table, 0, idx, rows])
            # In place, as a mixture of experts combines its experts' outputs: no copy of the table
            # (moe_top2_bf16's 64 were estimated at 4.3x their measured time from the out-of-place
            # rows, `python benchmarks/calibrate.py --pairs index`, session 17).
            yield make_case("index", "aten::index_add_", [table, 0, idx, rows])
            yield make_case("index", "aten::index_put_", [table, [idx], rows, True])
            # Picking one logit per row (cross entropy): [n, v] gathered along dim 1 by [n, 1].
            if _nbytes((n, v), dtype) <= 2 * GIB:
                logits, picks = _spec((n, v), dtype), _spec((n, 1), "int64")
                yield make_case("index", "aten::gather", [logits, 1, picks])
                yield make_case("index", "aten::scatter_add", [logits, 1, picks, _spec((n, 1), dtype)])
                yield make_case("index", "aten::scatter.src", [logits, 1, picks, _spec((n, 1), dtype)])
    # A leading full slice, then index tensors: DLRM's pairwise interactions `dots[:, rows, cols]`
    # (Naumov et al. 2019) over 27 feature vectors, and the accumulating index_put of its backward.
    for dtype in ("float32",) if quick else ("float32", "bfloat16"):
        for batch, n in [(4, 5)] if quick else [(b, n) for b in (1024, 4096, 16384) for n in (27, 64)]:
            dots, pairs = _spec((batch, n, n), dtype), n * (n - 1) // 2
            rows, cols = _spec((pairs,), "int64"), _spec((pairs,), "int64")
            yield make_case("index", "aten::index.Tensor", [dots, [None, rows, cols]])
            yield make_case("index", "aten::index_put", [dots, [None, rows, cols], _spec((batch, pairs), dtype), True])


# ---------------------------------------------------------------------------------------------
# cuDNN RNNs: nn.LSTM / GRU / RNN as one fused forward and backward (shapes in rnn_grid.py).


def _rnn_cases(shapes: Iterable[rnn_grid.RnnShape]) -> Iterator[ProfileCase]:
    """Forward and backward of each shape; float32 with TF32 allowed, cuDNN's default."""
    for shape in shapes:
        for op, args in rnn_grid.calls(shape):
            yield make_case("rnn", op, args, allow_tf32=shape.dtype == "float32")


def _rnn(quick: bool, rng: random.Random) -> Iterator[ProfileCase]:
    yield from _rnn_cases(rnn_grid.fixed_shapes(quick))


def _random_rnn(rng: random.Random) -> Iterator[ProfileCase]:
    yield from _rnn_cases(rnn_grid.random_shapes(rng))


# ---------------------------------------------------------------------------------------------
# Random draws: shapes off the fixed grids above, seeded. `maya profile` times them with the grid
# (training data between the grid points); `maya profile --random-only --seed N` times only them,
# which gives `benchmarks/estimator_accuracy.py` shapes the models never saw.

RANDOM_DRAWS = {
    "gemm": 700, "conv": 500, "sdpa": 160, "norm": 160, "softmax": 80, "embedding": 60,
    "elementwise": 300, "reduction": 120, "copy": 100, "foreach": 40, "index": 100, "pool": 40,
}  # fmt: skip
"""Random signatures drawn per family (a draw can yield a forward and its backward)."""


def _log_uniform(rng: random.Random, lo: int, hi: int, multiple: int = 1) -> int:
    """An integer in [lo, hi], log-uniform, rounded to `multiple` (at least `multiple`)."""
    value = math.exp(rng.uniform(math.log(lo), math.log(hi)))
    return max(multiple, round(value / multiple) * multiple)


def _model_width(rng: random.Random) -> int:
    """A hidden size as models use them: a multiple of 64 (rarely an odd size)."""
    return rng.choice(ODD_SIZES) if rng.random() < 0.1 else _log_uniform(rng, 128, 12288, 64)


def _random_gemm(rng: random.Random) -> Iterator[ProfileCase]:
    for _ in range(RANDOM_DRAWS["gemm"]):
        dtype, tf32 = rng.choice(_GEMM_DTYPES[:1] * 3 + _GEMM_DTYPES[1:])
        kind = rng.random()
        if kind < 0.4:  # a linear layer of a model: tokens x width -> width'
            m, n, k = _log_uniform(rng, 16, 32768, 16), _model_width(rng), _model_width(rng)
        elif kind < 0.8:  # any sizes, skinny and odd ones included
            m, n, k = (_random_size(rng) for _ in range(3))
        else:  # batched: attention scores and values, per-expert matmuls
            b, m, n, k = _log_uniform(rng, 2, 512), _log_uniform(rng, 16, 4096), _log_uniform(rng, 16, 4096), rng.choice((64, 128, 80, 96))
            if rng.random() < 0.5:
                m, n, k = m, k, n  # p @ v: [b, s, s] @ [b, s, d]
            if 2.0 * b * m * n * k > 2e12 or _nbytes((b, m, max(n, k)), dtype) > 2 * GIB:
                continue
            a = _spec((b, m, k), dtype) if rng.random() < 0.5 else _transposed((b, m, k), dtype)
            yield make_case("gemm", "aten::bmm", [a, _spec((b, k, n), dtype)], allow_tf32=tf32)
            continue
        if 2.0 * m * n * k > 2e12 or max(_nbytes(s, dtype) for s in ((m, k), (k, n), (m, n))) > 2 * GIB:
            continue
        a = _spec((m, k), dtype) if rng.random() < 0.5 else _transposed((m, k), dtype)
        b = _spec((k, n), dtype) if rng.random() < 0.5 else _transposed((k, n), dtype)
        if rng.random() < 0.5:
            yield make_case("gemm", "aten::mm", [a, b], allow_tf32=tf32)
        else:
            yield make_case("gemm", "aten::addmm", [_spec((n,), dtype), a, b], allow_tf32=tf32)


def _random_conv(rng: random.Random) -> Iterator[ProfileCase]:
    for _ in range(RANDOM_DRAWS["conv"]):
        dtype = rng.choice(("bfloat16", "bfloat16", "float32", "float16"))
        n, hw = _log_uniform(rng, 1, 256), _log_uniform(rng, 4, 256)
        k = rng.choice((1, 1, 3, 3, 3, 5, 7))
        stride = 2 if rng.random() < 0.25 else 1
        dilation = 2 if k == 3 and rng.random() < 0.1 else 1
        if rng.random() < 0.2:  # depthwise (MobileNet, ConvNeXt): one group per channel
            cin = cout = groups = _log_uniform(rng, 16, 1024, 8)
        else:
            cin = 3 if rng.random() < 0.05 else _log_uniform(rng, 8, 2048, 8)
            cout, groups = _log_uniform(rng, 8, 2048, 8), 1
        ho = (hw + 2 * (k // 2) * dilation - dilation * (k - 1) - 1) // stride + 1
        flops = 2.0 * n * cout * ho * ho * cin // groups * k * k
        if ho < 1 or flops > 5e11 or max(_nbytes((n, c, hw, hw), dtype) for c in (cin, cout)) > GIB:
            continue
        yield from _conv_cases(
            n, cin, hw, cout, k, stride, (k // 2) * dilation, dtype, rng.random() < 0.5,
            groups=groups, dilation=dilation, bias=rng.random() < 0.3,
        )  # fmt: skip


def _random_sdpa(rng: random.Random) -> Iterator[ProfileCase]:
    for _ in range(RANDOM_DRAWS["sdpa"]):
        dtype = rng.choice(("bfloat16", "bfloat16", "float16"))
        h, d = rng.choice((8, 12, 16, 20, 24, 32, 40, 48, 64)), rng.choice((64, 64, 128, 128, 96, 80))
        h_kv = rng.choice([x for x in (h, h, h // 4, h // 8) if x >= 1 and h % x == 0])
        s = _log_uniform(rng, 64, 8192, 64)
        b = max(1, _log_uniform(rng, 1024, 65536) // s)
        backend = rng.choice(_SDPA_BACKENDS)
        yield from _sdpa_cases(backend, b, h, h_kv, s, d, rng.random() < 0.5, dtype)


def _random_norm(rng: random.Random) -> Iterator[ProfileCase]:
    has_rms = hasattr(torch.ops.aten, "_fused_rms_norm")
    for _ in range(RANDOM_DRAWS["norm"]):
        dtype = rng.choice(("bfloat16", "float32"))
        if rng.random() < 0.25:  # batch norm on [N, C, H, W]
            n, c, hw = _log_uniform(rng, 2, 256), _log_uniform(rng, 16, 2048, 16), _log_uniform(rng, 4, 112)
            if _nbytes((n, c, hw, hw), dtype) > GIB:
                continue
            channels_last = rng.random() < 0.5
            # With native_batch_norm_backward, what an AMP model's bfloat16 batch norm runs backward
            # (cuDNN's takes no bfloat16 input).
            yield from _batch_norm_cases(_image((n, c, hw, hw), dtype, channels_last), BATCH_NORM_OPS[:4])
            continue
        tokens, c = _log_uniform(rng, 16, 65536), _model_width(rng)
        if _nbytes((tokens, c), dtype) > GIB:
            continue
        b = rng.choice([d for d in (1, 2, 4, 8, 16) if tokens % d == 0])
        x, w, stat = _spec((b, tokens // b, c), dtype), _spec((c,), dtype), _spec((b, tokens // b, 1), "float32")
        if has_rms and rng.random() < 0.5:
            yield make_case("norm", "aten::_fused_rms_norm", [x, [c], w, 1e-6])
            yield make_case("norm", "aten::_fused_rms_norm_backward", [x, x, [c], stat, w, [True, True]])
        else:
            yield make_case("norm", "aten::native_layer_norm", [x, [c], w, w, 1e-5])
            yield make_case("norm", "aten::native_layer_norm_backward", [x, x, [c], stat, stat, w, w, [True] * 3])


def _random_softmax(rng: random.Random) -> Iterator[ProfileCase]:
    for _ in range(RANDOM_DRAWS["softmax"]):
        dtype = rng.choice(("bfloat16", "float32"))
        if rng.random() < 0.5:  # cross entropy over a vocabulary
            t, v = _log_uniform(rng, 64, 32768), _log_uniform(rng, 1000, 262144)
            if _nbytes((t, v), dtype) > 4 * GIB:
                continue
            logits, target, scalar = _spec((t, v), dtype), _spec((t,), "int64"), _spec((), dtype)
            yield make_case("softmax", "aten::_log_softmax", [logits, 1, False])
            yield make_case("softmax", "aten::_log_softmax_backward_data", [logits, logits, 1, getattr(torch, dtype)])
            yield make_case("softmax", "aten::nll_loss_forward", [logits, target, None, 1, -100])
            yield make_case("softmax", "aten::nll_loss_backward", [scalar, logits, target, None, 1, -100, scalar])
        else:  # attention scores of eager attention
            bh, s = _log_uniform(rng, 8, 512), _log_uniform(rng, 64, 4096)
            if _nbytes((bh, s, s), dtype) > 2 * GIB:
                continue
            x = _spec((bh, s, s), dtype)
            yield make_case("softmax", "aten::_softmax", [x, -1, False])
            yield make_case("softmax", "aten::_softmax_backward_data", [x, x, -1, getattr(torch, dtype)])


def _random_embedding(rng: random.Random) -> Iterator[ProfileCase]:
    for _ in range(RANDOM_DRAWS["embedding"]):
        dtype = rng.choice(("bfloat16", "float32"))
        v, c, tokens = _log_uniform(rng, 1000, 262144), _model_width(rng), _log_uniform(rng, 256, 65536)
        if _nbytes((v, c), dtype) > 2 * GIB or _nbytes((tokens, c), dtype) > GIB:
            continue
        idx = _spec((tokens,), "int64")
        yield make_case("embedding", "aten::embedding", [_spec((v, c), dtype), idx])
        yield make_case("embedding", "aten::embedding_dense_backward", [_spec((tokens, c), dtype), idx, v, -1, False])


def _random_activation(rng: random.Random, dtype: str, max_bytes: int = GIB) -> TensorSpec:
    numel = _log_uniform(rng, 1, max_bytes // (4 if dtype == "float32" else 2))
    return _spec(_activation_shape(numel, _model_width(rng)), dtype)


def _random_elementwise(rng: random.Random) -> Iterator[ProfileCase]:
    for _ in range(RANDOM_DRAWS["elementwise"]):
        dtype = rng.choice(("bfloat16", "float32"))
        x = _random_activation(rng, dtype)
        op, args, kwargs = rng.choice(_elementwise_calls(x, _spec(x.shape, "bool")))
        yield make_case("elementwise", op, args, kwargs)


def _random_reduction(rng: random.Random) -> Iterator[ProfileCase]:
    for _ in range(RANDOM_DRAWS["reduction"]):
        x = _random_activation(rng, rng.choice(("bfloat16", "float32")))
        op, args = rng.choice((
            ("aten::sum.dim_IntList", [x, [0]]), ("aten::sum.dim_IntList", [x, [-1], True]),
            ("aten::mean.dim", [x, [-1], True]), ("aten::amax", [x, [-1], True]), ("aten::sum", [x]),
        ))  # fmt: skip
        yield make_case("reduction", op, args)


def _random_copy(rng: random.Random) -> Iterator[ProfileCase]:
    for _ in range(RANDOM_DRAWS["copy"]):
        dtype = rng.choice(("bfloat16", "float32"))
        x = _random_activation(rng, dtype)
        other = "float32" if dtype == "bfloat16" else "bfloat16"
        kind = rng.random()
        if kind < 0.3:
            yield make_case("copy", "aten::_to_copy", [x], {"dtype": getattr(torch, other)})
        elif kind < 0.6:
            yield make_case("copy", "aten::copy_", [x, _spec(x.shape, other if rng.random() < 0.5 else dtype)])
        elif kind < 0.8 or len(x.shape) < 2:
            yield make_case("copy", "aten::clone", [x])
        else:
            yield make_case("copy", "aten::clone", [_transposed(x.shape, dtype)], {"memory_format": torch.contiguous_format})


def _random_pool(rng: random.Random) -> Iterator[ProfileCase]:
    for _ in range(RANDOM_DRAWS["pool"]):
        dtype, channels_last = rng.choice(("bfloat16", "float32")), rng.random() < 0.5
        n, c, side = _log_uniform(rng, 1, 256), _log_uniform(rng, 16, 1024, 16), _log_uniform(rng, 4, 224)
        kernel, stride, padding = rng.choice(POOL_WINDOWS)
        if _nbytes((n, c, side, side), dtype) <= GIB:
            yield from _pool_cases(rng.choice(("max", "avg")), n, c, side, dtype, channels_last, kernel, stride, padding)


def _random_foreach(rng: random.Random) -> Iterator[ProfileCase]:
    for _ in range(RANDOM_DRAWS["foreach"]):
        dtype = rng.choice(("float32", "float32", "bfloat16"))
        numels = [_log_uniform(rng, 64, 1 << 24) for _ in range(_log_uniform(rng, 1, 512))]
        if sum(numels) > 1 << 28:
            continue
        params, grads, moments = ([_spec((n,), dtype) for n in numels] for _ in range(3))
        scalars = [0.5] * len(numels)
        op, args = rng.choice((
            ("aten::_foreach_add_.List", [params, grads]), ("aten::_foreach_mul_.Scalar", [params, 0.99]),
            ("aten::_foreach_lerp_.Scalar", [params, grads, 0.1]),
            ("aten::_foreach_addcmul_.Scalar", [params, grads, grads, 0.001]),
            ("aten::_foreach_addcdiv_.ScalarList", [params, grads, moments, scalars]),
            ("aten::_foreach_sqrt", [params]), ("aten::_foreach_norm.Scalar", [grads]),
        ))  # fmt: skip
        yield make_case("foreach", op, args)


def _random_index(rng: random.Random) -> Iterator[ProfileCase]:
    for _ in range(RANDOM_DRAWS["index"]):
        dtype = rng.choice(("bfloat16", "float32"))
        v, c, n = _log_uniform(rng, 64, 131072), _log_uniform(rng, 16, 8192, 16), _log_uniform(rng, 16, 131072)
        if _nbytes((v, c), dtype) > GIB or _nbytes((n, c), dtype) > GIB:
            continue
        table, rows, idx = _spec((v, c), dtype), _spec((n, c), dtype), _spec((n,), "int64")
        op, args = rng.choice((
            ("aten::index_select", [table, 0, idx]), ("aten::index.Tensor", [table, [idx]]),
            ("aten::index_add", [table, 0, idx, rows]), ("aten::index_put_", [table, [idx], rows, True]),
        ))  # fmt: skip
        yield make_case("index", op, args)


_RANDOM_GRIDS: dict[str, Callable[[random.Random], Iterator[ProfileCase]]] = {
    "gemm": _random_gemm,
    "conv": _random_conv,
    "sdpa": _random_sdpa,
    "norm": _random_norm,
    "softmax": _random_softmax,
    "embedding": _random_embedding,
    "elementwise": _random_elementwise,
    "reduction": _random_reduction,
    "copy": _random_copy,
    "foreach": _random_foreach,
    "index": _random_index,
    "rnn": _random_rnn,
    "pool": _random_pool,
}


_CNN_LAYOUT_GRIDS: dict[str, Callable[[], Iterator[ProfileCase]]] = {
    "copy": _cnn_layout_copies,
    "reduction": _cnn_layout_reductions,
    "norm": _cnn_layout_norms,
}
"""The fixed grid's CNN-layout cases per family (`grid(..., part="cnn")`)."""


_GRIDS: dict[str, Callable[[bool, random.Random], Iterator[ProfileCase]]] = {
    "gemm": _gemm,
    "conv": _conv,
    "sdpa": _sdpa,
    "norm": _norm,
    "softmax": _softmax,
    "embedding": _embedding,
    "elementwise": _elementwise,
    "reduction": _reduction,
    "copy": _copy,
    "foreach": _foreach,
    "index": _index,
    "rnn": _rnn,
    "pool": _pool,
}
