"""Encoding of an op call into a trace row: its tensor metadata and the replayable `attrs`.

The encoding is documented in docs/trace-schema.md: tensors become `{"$t": i}` (an index into
the row's input tensors, in depth-first order over args then kwargs), dtypes `{"$dtype": name}`,
devices `{"$device": "cuda"}`, memory formats and layouts likewise. The emulator records with it
and the profiler (`maya.estimator.replay`) builds profile rows with it, so both spell rows alike.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

TensorMeta = tuple[tuple[int, ...], str, tuple[int, ...]]
"""(shape, dtype name, strides) of one tensor."""

CUDNN_BENCHMARK = "cudnn_benchmark"
"""Top-level `attrs` key, present (true) on a convolution recorded while `torch.backends.cudnn.benchmark`
was on: cuDNN then times its algorithms and runs the fastest, instead of the one its heuristics pick,
so the same shape can take a different time. Absent when the flag was off (PyTorch's default)."""

DATA_DEPENDENT_SHAPE = "data_dependent_shape"
"""Top-level `attrs` key, present (true) on a kernel with an input whose shape has a size that a
data-dependent op chose (`nonzero`, boolean indexing, `masked_select`, `repeat_interleave`, `unique`:
`maya.emulator.recorder`): on a GPU that size follows the data, so the op's shape changes from step to
step (a mixture-of-experts expert's GEMMs), and cuBLAS chooses its kernel anew. It describes how the op
runs, not what it computes: signature keys leave it out (`maya.estimator.signature.canonical_attrs`)."""

NEW_SHAPE = "new_shape"
"""Top-level `attrs` key on a GEMM, convolution or cuDNN attention row whose shape the process had not
run before (a size a data-dependent op chose counts as new at each such call): the host figure it pays
for cuBLAS's kernel lookup or cuDNN's plan, a key of the host profile's `new_shape_us` ("gemm",
"gemm_k", "gemm_float32", "conv", "conv_float32", "conv_backward", "cudnn_attention", ...;
`maya.emulator.shape_caches`). Signature keys leave it out."""

INTERNAL_LAUNCH = "internal_launch"
"""Top-level `attrs` key, present (true) on a kernel that another op's CUDA implementation launches
inside itself, below the dispatcher (an operand copy, `maya.emulator.operand_copies`): on a GPU its
host time is one aten op's launch from C++, not a Python-level op's, so the host model charges it
`aten_op_us` whatever its phase (`maya.estimator.host_cost`). Signature keys leave it out."""

GRAPH_REPLAY = "graph_replay"
"""Top-level `attrs` key, present (true) on a row that a CUDA graph's `replay()` issued
(`maya.emulator.cuda_graphs`): the GPU runs it as it would eagerly, but the host launched the whole
graph at once, so the host model charges the row nothing. Signature keys leave it out."""

RUN_MARKS = (DATA_DEPENDENT_SHAPE, NEW_SHAPE, INTERNAL_LAUNCH, GRAPH_REPLAY)
"""Top-level `attrs` keys that say how an op is issued (how often its shape recurs, whether another op
launched it), not what the op computes or how its kernel is chosen: signature keys leave them out
(`maya.estimator.signature.canonical_attrs`)."""

CUDNN_BENCHMARK_OPS = frozenset({"aten::convolution", "aten::convolution_backward"})
"""Ops whose algorithm `torch.backends.cudnn.benchmark` chooses (every 2-D/3-D convolution reaches
cuDNN through these two)."""

_DTYPE_NAMES = {d: str(d).removeprefix("torch.") for d in vars(torch).values() if isinstance(d, torch.dtype)}
_MEMORY_FORMATS = {
    torch.contiguous_format: "contiguous_format",
    torch.channels_last: "channels_last",
    torch.channels_last_3d: "channels_last_3d",
    torch.preserve_format: "preserve_format",
}


def dtype_name(dtype: torch.dtype) -> str:
    """`torch.bfloat16` -> "bfloat16"."""
    return _DTYPE_NAMES[dtype]


def tensor_meta(t: torch.Tensor) -> TensorMeta:
    """(shape, dtype name, strides) of a tensor."""
    return tuple(t.shape), _DTYPE_NAMES[t.dtype], t.stride()


def encode_call(
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    describe: Callable[[Any], TensorMeta | None] | None = None,
) -> tuple[dict, list[TensorMeta]]:
    """The JSON-ready `attrs` of one op call and the metadata of its input tensors, in one pass.

    Args:
        args, kwargs: the call's arguments.
        describe: optional hook for tensor-like values that are not torch.Tensor (the profiler's
            shape specs); returns their metadata, or None for values that are not tensors.
    """
    metas: list[TensorMeta] = []
    index_of: dict[int, int] = {}  # id() of each list entry encoded so far -> its index

    def tensor(v: object, meta: TensorMeta, in_list: bool) -> dict:
        # A list entry that is a tensor already met in a list of this call (Adam's
        # `_foreach_addcmul_(exp_avg_sqs, grads, grads)`) reuses its index: the kernel reads it once.
        if in_list:
            index = index_of.get(id(v))
            if index is not None:
                return {"$t": index}
            index_of[id(v)] = len(metas)
        metas.append(meta)
        return {"$t": len(metas) - 1}

    def enc(v: object, in_list: bool = False) -> object:
        if isinstance(v, torch.Tensor):
            return tensor(v, tensor_meta(v), in_list)
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, (list, tuple)):
            return [enc(x, True) for x in v]
        if isinstance(v, torch.dtype):
            return {"$dtype": _DTYPE_NAMES[v]}
        if isinstance(v, torch.device):
            return {"$device": "cuda" if v.type == "maya" else v.type}
        if isinstance(v, torch.memory_format):
            return {"$memory_format": _MEMORY_FORMATS.get(v, str(v))}
        if isinstance(v, torch.layout):
            return {"$layout": str(v).removeprefix("torch.")}
        meta = describe(v) if describe is not None else None
        if meta is not None:
            return tensor(v, meta, in_list)
        return {"$repr": repr(v)}

    attrs = {"args": [enc(a) for a in args], "kwargs": {k: enc(v) for k, v in kwargs.items()}}
    return attrs, metas


def flatten_tensors(args: Sequence[Any], kwargs: Mapping[str, Any]) -> list[torch.Tensor]:
    """Every tensor in args then kwargs, depth-first: the order of `encode_call`'s metadata.

    Iterative on purpose: a recursive closure would form a reference cycle that keeps the tensors
    (and so their emulated memory) alive until the garbage collector runs.
    """
    out: list[torch.Tensor] = []
    stack: list[Any] = [*reversed(kwargs.values()), *reversed(args)]
    while stack:
        v = stack.pop()
        if isinstance(v, torch.Tensor):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            stack.extend(reversed(v))
    return out
