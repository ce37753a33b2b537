"""Replaying one recorded op signature on a real device.

A signature is what a trace row holds about a kernel: the op name, the shape, dtype and strides of
every tensor argument, and the attrs JSON (`{"args": [...], "kwargs": {...}}`, tensors as
`{"$t": i}`; docs/trace-schema.md). `build_replay` allocates tensors with exactly those strides,
fills them with values the op accepts (valid indices for index tensors, forward results for the
inputs of fused backward ops), and returns a `Replay`: a zero-argument callable that runs
`torch.ops.aten.<name>.<overload>(*args, **kwargs)`.

Only torch and the standard library are imported: this runs on the GPU profiling machine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from maya.emulator.attrs import encode_call, flatten_tensors
from maya.emulator.rnn_kernels import contiguous_strides

FLOAT_FILL_ABS = "abs"
"""Fill rule: |randn|, for tensors that must be non-negative (variances, second moments)."""
FLOAT_FILL_ONES = "ones"
"""Fill rule: all ones, for optimizer step counters."""
OFFSETS_FILL = "offsets"
"""Fill rule, as `(OFFSETS_FILL, n)`: 0, n, 2n, ... (bag offsets of `embedding_bag`, n lookups per bag)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class TensorSpec:
    """A tensor argument described, not built: what one trace row records about it."""

    shape: tuple[int, ...]
    """Sizes, in elements."""
    dtype: str
    """torch dtype name without the prefix ("bfloat16")."""
    strides: tuple[int, ...] | None = None
    """Strides in elements; None means contiguous."""


class ReplayError(ValueError):
    """A signature cannot be replayed (unknown op, an argument recorded only as `$repr`, ...)."""


class Replay:
    """A ready-to-run op: call it (no arguments) to run the op once on the device.

    Inputs are not restored between calls, so an in-place op mutates them across repetitions.
    """

    __slots__ = ("op", "fn", "args", "kwargs", "inputs")

    def __init__(self, *, op: str, fn: Callable, args: list, kwargs: dict, inputs: list[torch.Tensor]):
        self.op = op
        """The aten op name, e.g. "aten::addmm"."""
        self.fn = fn
        """The resolved `torch.ops.aten.<name>.<overload>`."""
        self.args = args
        """Positional arguments, tensors built."""
        self.kwargs = kwargs
        """Keyword arguments, tensors built."""
        self.inputs = inputs
        """Every tensor argument in trace flattening order (args then kwargs, depth-first)."""

    def __call__(self) -> Any:
        return self.fn(*self.args, **self.kwargs)


def resolve_op(op: str) -> torch._ops.OpOverload:
    """`"aten::add.Tensor"` -> `torch.ops.aten.add.Tensor`; no overload means `.default`."""
    namespace, sep, rest = op.partition("::")
    if not sep:
        raise ReplayError(f"op name {op!r} has no namespace (expected 'aten::name[.overload]')")
    name, _, overload = rest.partition(".")
    try:
        packet = getattr(getattr(torch.ops, namespace), name)
        return getattr(packet, overload or "default")
    except (AttributeError, RuntimeError) as exc:
        raise ReplayError(f"{op!r} is not an operator in torch {torch.__version__}") from exc


def build_replay(
    op: str,
    input_shapes: Sequence[Sequence[int]],
    input_dtypes: Sequence[str],
    input_strides: Sequence[Sequence[int]] | None,
    attrs: Mapping[str, Any],
    *,
    device: str | torch.device = "cuda",
    seed: int = 0,
) -> Replay:
    """Build the tensors of one signature on `device` and return a callable that runs the op.

    Args:
        op: aten op name with overload unless default ("aten::mm", "aten::_foreach_mul_.Scalar").
        input_shapes: shape of each tensor argument, in trace flattening order.
        input_dtypes: torch dtype name of each tensor argument ("bfloat16").
        input_strides: strides (elements) of each tensor argument; None or [] means contiguous.
        attrs: decoded attrs, {"args": [...], "kwargs": {...}}.
        device: where to build the tensors; `{"$device": "cuda..."}` arguments map here too.
        seed: seeds the random fill.

    Returns:
        A `Replay`; calling it runs the op once.

    Raises:
        ReplayError: the op does not exist or an argument cannot be decoded.
    """
    device = torch.device(device)
    fn = resolve_op(op)
    if len(input_dtypes) != len(input_shapes):
        raise ReplayError(f"{op}: {len(input_shapes)} shapes but {len(input_dtypes)} dtypes")
    torch.manual_seed(seed)
    raw_args = list(attrs.get("args", []))
    raw_kwargs = dict(attrs.get("kwargs", {}))
    base = op.partition("::")[2].partition(".")[0]
    fills = _fill_rules(base, raw_args, raw_kwargs, input_shapes)

    tensors = []
    for i, (shape, dtype_text) in enumerate(zip(input_shapes, input_dtypes)):
        strides = input_strides[i] if input_strides is not None and i < len(input_strides) else None
        tensors.append(_make_tensor(list(shape), strides, _dtype(dtype_text), device, fills.get(i)))

    args = [_decode(a, tensors, device) for a in raw_args]
    kwargs = {k: _decode(v, tensors, device) for k, v in raw_kwargs.items()}
    forward_first = _FORWARD_FIRST.get(base)
    if forward_first is not None:
        forward_first(args, kwargs)
    return Replay(op=op, fn=fn, args=args, kwargs=kwargs, inputs=flatten_tensors(args, kwargs))


def encode_arguments(
    args: Sequence[Any], kwargs: Mapping[str, Any]
) -> tuple[dict[str, Any], list[list[int]], list[str], list[list[int]]]:
    """Encode an op's arguments the way a trace row records them (the inverse of replay's decoding).

    Args:
        args: positional arguments; tensors may be `torch.Tensor` or `TensorSpec`.
        kwargs: keyword arguments.

    Returns:
        (attrs, input_shapes, input_dtypes, input_strides): attrs is `{"args": [...], "kwargs": {...}}`
        with tensors replaced by `{"$t": i}`, and the three lists describe tensor i.
    """
    attrs, metas = encode_call(args, kwargs, describe=_describe_spec)
    return attrs, [list(m[0]) for m in metas], [m[1] for m in metas], [list(m[2]) for m in metas]


def _describe_spec(value: Any) -> tuple | None:
    if isinstance(value, TensorSpec):
        return tuple(value.shape), value.dtype, tuple(value.strides or contiguous_strides(value.shape))
    return None


# ---------------------------------------------------------------------------------------------
# Decoding attrs and building tensors.


def _dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name.removeprefix("torch."), None)
    if not isinstance(dtype, torch.dtype):
        raise ReplayError(f"unknown dtype {name!r}")
    return dtype


def _decode(value: Any, tensors: list[torch.Tensor], device: torch.device) -> Any:
    if isinstance(value, list):
        return [_decode(v, tensors, device) for v in value]
    if not isinstance(value, dict):
        return value
    if "$t" in value:
        return tensors[value["$t"]]
    if "$dtype" in value:
        return _dtype(value["$dtype"])
    if "$device" in value:
        name = str(value["$device"])
        return torch.device("cpu") if name == "cpu" else device
    if "$memory_format" in value:
        return getattr(torch, value["$memory_format"])
    if "$layout" in value:
        return getattr(torch, value["$layout"])
    if "$repr" in value:
        raise ReplayError(f"argument recorded only as {value['$repr']!r}; it cannot be replayed")
    return {k: _decode(v, tensors, device) for k, v in value.items()}


def _make_tensor(
    shape: list[int], strides: Sequence[int] | None, dtype: torch.dtype, device: torch.device, fill: Any
) -> torch.Tensor:
    """A tensor with exactly `shape` and `strides`, its whole storage filled.

    The storage is allocated flat and viewed with `as_strided`, so overlapping (stride 0) and
    transposed layouts are filled like any other.
    """
    if not strides:
        strides = contiguous_strides(shape)
    strides = list(strides)
    if len(strides) != len(shape):
        raise ReplayError(f"shape {shape} and strides {strides} differ in rank")
    storage_numel = 0 if 0 in shape else 1 + sum((s - 1) * st for s, st in zip(shape, strides))
    flat = torch.empty(storage_numel, dtype=dtype, device=device)
    _fill(flat, fill)
    return flat.as_strided(shape, strides)



def _fill(flat: torch.Tensor, fill: Any) -> None:
    """Random normal for floats, random bits for bool, [0, high) for index tensors, else zeros."""
    if flat.numel() == 0:
        return
    if fill == FLOAT_FILL_ONES:
        flat.fill_(1)
    elif isinstance(fill, tuple) and fill[0] == OFFSETS_FILL:
        torch.arange(0, flat.numel() * fill[1], fill[1], out=flat)
    elif isinstance(fill, int) and not isinstance(fill, bool):
        if flat.dtype.is_floating_point:
            flat.normal_()
        else:
            flat.random_(0, max(fill, 1))
    elif flat.dtype == torch.bool:
        flat.random_(0, 2)
    elif flat.dtype.is_floating_point or flat.dtype.is_complex:
        try:
            flat.normal_()
        except (RuntimeError, NotImplementedError):  # float8 and other dtypes without a normal kernel
            flat.copy_(torch.randn(flat.shape, device=flat.device))
        if fill == FLOAT_FILL_ABS:
            flat.abs_()
    else:
        flat.zero_()


# ---------------------------------------------------------------------------------------------
# Fill rules: which integer tensors are indices, and into which dimension.


def _t(value: Any) -> int | None:
    """The tensor index of an encoded `{"$t": i}`, else None."""
    return value["$t"] if isinstance(value, dict) and "$t" in value else None


def _get(args: list, kwargs: dict, index: int, name: str, default: Any = None) -> Any:
    return args[index] if index < len(args) else kwargs.get(name, default)


def _numel(shape: Sequence[int]) -> int:
    n = 1
    for size in shape:
        n *= size
    return n


def _dim_size(shapes: Sequence[Sequence[int]], tensor: Any, dim: Any) -> int | None:
    i = _t(tensor)
    if i is None or not isinstance(dim, int):
        return None
    shape = shapes[i]
    if not shape:
        return 1
    return shape[dim % len(shape)]


def _fill_rules(base: str, args: list, kwargs: dict, shapes: Sequence[Sequence[int]]) -> dict[int, Any]:
    """Map tensor index -> fill: an int `high` (indices in [0, high)), "abs", "ones" or (OFFSETS_FILL, n)."""
    rules: dict[int, Any] = {}

    def index_into(index_arg: Any, high: int | None) -> None:
        i = _t(index_arg)
        if i is not None and high is not None:
            rules[i] = high

    def mark_list(value: Any, fill: str) -> None:
        for item in value if isinstance(value, list) else [value]:
            i = _t(item)
            if i is not None:
                rules[i] = fill

    if base == "embedding":
        index_into(_get(args, kwargs, 1, "indices"), _dim_size(shapes, _get(args, kwargs, 0, "weight"), 0))
    elif base == "embedding_dense_backward":
        index_into(_get(args, kwargs, 1, "indices"), _get(args, kwargs, 2, "num_weights"))
    elif base in ("_embedding_bag", "_embedding_bag_forward_only", "_embedding_bag_backward"):
        # (weight | grad, indices, offsets, ...): indices into the table, offsets evenly spaced.
        indices, offsets = _t(_get(args, kwargs, 1, "indices")), _t(_get(args, kwargs, 2, "offsets"))
        if base == "_embedding_bag_backward":
            index_into(_get(args, kwargs, 1, "indices"), _get(args, kwargs, 6, "num_weights"))
        else:
            index_into(_get(args, kwargs, 1, "indices"), _dim_size(shapes, _get(args, kwargs, 0, "weight"), 0))
        if indices is not None and offsets is not None and shapes[offsets]:
            per_bag = _numel(shapes[indices]) // max(shapes[offsets][0], 1)
            rules[offsets] = (OFFSETS_FILL, per_bag)
    elif base in ("nll_loss_forward", "nll_loss2d_forward", "nll_loss_backward", "nll_loss2d_backward"):
        offset = 0 if base.endswith("forward") else 1
        logits = _get(args, kwargs, offset, "self")
        i = _t(logits)
        if i is not None:
            classes = shapes[i][1] if len(shapes[i]) >= 2 else (shapes[i][0] if shapes[i] else 1)
            index_into(_get(args, kwargs, offset + 1, "target"), classes)
    elif base in _DIM_INDEX_OPS:
        self_arg, dim = _get(args, kwargs, 0, "self"), _get(args, kwargs, 1, "dim")
        index_into(_get(args, kwargs, 2, "index"), _dim_size(shapes, self_arg, dim))
    elif base in ("index", "index_put_", "index_put", "_index_put_impl_", "_unsafe_index", "_unsafe_index_put"):
        self_i = _t(_get(args, kwargs, 0, "self"))
        indices = _get(args, kwargs, 1, "indices", [])
        if self_i is not None and isinstance(indices, list):
            for dim, index in enumerate(indices):
                if dim < len(shapes[self_i]):
                    index_into(index, shapes[self_i][dim])
    elif base in ("_fused_adam_", "_fused_adamw_"):
        mark_list(_get(args, kwargs, 3, "exp_avg_sqs"), FLOAT_FILL_ABS)
        mark_list(_get(args, kwargs, 4, "max_exp_avg_sqs"), FLOAT_FILL_ABS)
        mark_list(_get(args, kwargs, 5, "state_steps"), FLOAT_FILL_ONES)
    elif base in ("native_batch_norm", "cudnn_batch_norm", "_batch_norm_with_update", "_native_batch_norm_legit"):
        mark_list(_get(args, kwargs, 4, "running_var"), FLOAT_FILL_ABS)
    elif base in ("_foreach_sqrt", "_foreach_sqrt_", "sqrt", "rsqrt", "log"):
        mark_list(_get(args, kwargs, 0, "self"), FLOAT_FILL_ABS)
    elif base in ("floor_divide", "floor_divide_"):
        mark_list(_get(args, kwargs, 1, "other"), FLOAT_FILL_ONES)  # an integer divisor of 0 raises
    return rules


_DIM_INDEX_OPS = frozenset({
    "gather", "scatter", "scatter_", "scatter_add", "scatter_add_", "scatter_reduce", "scatter_reduce_",
    "index_select", "index_add", "index_add_", "index_copy", "index_copy_", "index_fill", "index_fill_",
    "index_reduce", "index_reduce_",
})  # fmt: skip
"""Ops `(self, dim, index, ...)` whose index values must lie in [0, self.shape[dim])."""


# ---------------------------------------------------------------------------------------------
# Forward-first: fused backward ops need real forward results (logsumexp, RNG state, cuDNN
# reserve space), so the forward runs once on the same inputs and its results replace the
# recorded placeholders. Each function edits `args` in place.


def _substitute(args: list, outputs: Sequence[Any], mapping: Mapping[int, int]) -> None:
    for arg_index, out_index in mapping.items():
        if arg_index < len(args):
            args[arg_index] = outputs[out_index]


def _real_tensor(value: Any) -> torch.Tensor | None:
    return value if isinstance(value, torch.Tensor) and value.numel() > 0 else None


def _cudnn_attention_backward(args: list, kwargs: dict) -> None:
    # backward(grad_out, q, k, v, out, lse, philox_seed, philox_offset, attn_bias, cum_seq_q,
    #          cum_seq_k, max_q, max_k, dropout_p, is_causal, *, scale)
    fwd = torch.ops.aten._scaled_dot_product_cudnn_attention.default(
        args[1], args[2], args[3], _real_tensor(args[8]), True, args[13], args[14], False,
        scale=kwargs.get("scale"),
    )  # fmt: skip
    _substitute(args, fwd, {4: 0, 5: 1, 6: 6, 7: 7, 9: 2, 10: 3, 11: 4, 12: 5})


def _flash_attention_backward(args: list, kwargs: dict) -> None:
    # backward(grad_out, q, k, v, out, lse, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p,
    #          is_causal, philox_seed, philox_offset, *, scale)
    fwd = torch.ops.aten._scaled_dot_product_flash_attention.default(
        args[1], args[2], args[3], args[10], args[11], False, scale=kwargs.get("scale")
    )
    _substitute(args, fwd, {4: 0, 5: 1, 6: 2, 7: 3, 8: 4, 9: 5, 12: 6, 13: 7})


def _efficient_attention_backward(args: list, kwargs: dict) -> None:
    # backward(grad_out, q, k, v, attn_bias, out, lse, philox_seed, philox_offset, dropout_p,
    #          grad_input_mask, is_causal=False, *, scale)
    is_causal = _get(args, kwargs, 11, "is_causal", False)
    fwd = torch.ops.aten._scaled_dot_product_efficient_attention.default(
        args[1], args[2], args[3], _real_tensor(args[4]), True, args[9], is_causal, scale=kwargs.get("scale")
    )
    _substitute(args, fwd, {5: 0, 6: 1, 7: 2, 8: 3})


def _cpu_flash_attention_backward(args: list, kwargs: dict) -> None:
    # backward(grad_out, q, k, v, out, lse, dropout_p, is_causal, *, attn_mask, scale)
    fwd = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(
        args[1], args[2], args[3], args[6], args[7], attn_mask=kwargs.get("attn_mask"), scale=kwargs.get("scale")
    )
    _substitute(args, fwd, {4: 0, 5: 1})


def _cudnn_batch_norm_backward(args: list, kwargs: dict) -> None:
    # backward(input, grad_output, weight, running_mean, running_var, save_mean, save_var, eps, reserve)
    fwd = torch.ops.aten.cudnn_batch_norm.default(
        args[0], args[2], torch.zeros_like(args[2]), args[3], args[4], True, 0.1, args[7]
    )
    _substitute(args, fwd, {5: 1, 6: 2, 8: 3})


def _batch_norm_backward(args: list, kwargs: dict) -> None:
    # backward(grad_out, input, weight, running_mean, running_var, save_mean, save_var, update, eps,
    #          output_mask, reserve)
    if args[7] and args[3] is not None and args[4] is not None:
        fwd = torch.ops.aten._batch_norm_with_update.default(args[1], args[2], None, args[3], args[4], 0.1, args[8])
    else:
        fwd = torch.ops.aten._batch_norm_no_update.default(args[1], args[2], None, args[3], args[4], 0.1, args[8])
    _substitute(args, fwd, {5: 1, 6: 2, 10: 3})


def _embedding_bag_backward(args: list, kwargs: dict) -> None:
    # backward(grad, indices, offsets, offset2bag, bag_size, maximum_indices, num_weights,
    #          scale_grad_by_freq, mode, sparse, per_sample_weights, padding_idx=-1)
    grad, indices, offsets = args[0], args[1], args[2]
    weight = torch.empty((args[6], grad.shape[-1]), dtype=grad.dtype, device=grad.device)
    padding_idx = _get(args, kwargs, 11, "padding_idx", -1)
    fwd = torch.ops.aten._embedding_bag.default(
        weight, indices, offsets, False, args[8], False, _get(args, kwargs, 10, "per_sample_weights"), False, padding_idx
    )
    _substitute(args, fwd, {3: 1, 4: 2, 5: 3})


def _cudnn_rnn_inputs(args: list, kwargs: dict) -> None:
    # (input, weight[], weight_stride0, weight_buf, hx, cx, mode, hidden_size, proj_size, num_layers,
    #  batch_first, dropout, train, bidirectional, batch_sizes, dropout_state): a weight buffer laid
    # out as cuDNN wants it, with the weights as views into it (what flatten_parameters() leaves),
    # and the dropout state cuDNN needs for dropout between layers (traces record none).
    if args[3] is not None:
        args[3] = torch._cudnn_rnn_flatten_weight(
            args[1], args[2], args[0].shape[-1], args[6], args[7], args[8], args[9], args[10], args[13]
        )
    if args[11] > 0 and args[12] and args[15] is None:
        args[15] = torch._cudnn_init_dropout_state(args[11], True, 0, dtype=torch.uint8, device=args[0].device)


def _cudnn_rnn_backward(args: list, kwargs: dict) -> None:
    # backward(input, weight[], weight_stride0, weight_buf, hx, cx, output, grad_output, grad_hy,
    #          grad_cy, mode, ..., dropout_state, reserve, output_mask): forward args are 0-5, 10-19.
    forward = [*args[:6], *args[10:20]]
    _cudnn_rnn_inputs(forward, kwargs)
    fwd = torch.ops.aten._cudnn_rnn.default(*forward)
    args[19] = forward[15]
    _substitute(args, fwd, {3: 4, 6: 0, 20: 3})


def _max_pool2d_backward(args: list, kwargs: dict) -> None:
    # backward(grad_out, self, kernel_size, stride, padding, dilation, ceil_mode, indices)
    _, args[7] = torch.ops.aten.max_pool2d_with_indices.default(*args[1:7])


_FORWARD_FIRST: dict[str, Callable[[list, dict], None]] = {
    "_cudnn_rnn": _cudnn_rnn_inputs,
    "_cudnn_rnn_backward": _cudnn_rnn_backward,
    "_scaled_dot_product_cudnn_attention_backward": _cudnn_attention_backward,
    "_scaled_dot_product_flash_attention_backward": _flash_attention_backward,
    "_scaled_dot_product_efficient_attention_backward": _efficient_attention_backward,
    "_scaled_dot_product_flash_attention_for_cpu_backward": _cpu_flash_attention_backward,
    "cudnn_batch_norm_backward": _cudnn_batch_norm_backward,
    "batch_norm_backward": _batch_norm_backward,
    "_embedding_bag_backward": _embedding_bag_backward,
    "max_pool2d_with_indices_backward": _max_pool2d_backward,
}
"""Backward ops whose saved-tensor inputs come from running their forward first."""

