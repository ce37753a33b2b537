"""Which recorded ops run a shape the process has not run before, for the caches that cost host time.

cuBLAS chooses a GEMM's kernel with a heuristic query and keeps the answer per problem shape; cuDNN
builds an execution plan per convolution and attention shape, and PyTorch keeps the plans. A call on a
shape met before costs the host what any launch costs; a call on a new shape costs the lookup or the
build as well (measured on an H200 by `benchmarks/gpu/new_shape_host_probe.py`: a bfloat16 GEMM about
0.28 ms, a cuDNN attention forward 58 ms, a convolution forward 1.6 ms; the figures live in the host
profile, `maya.estimator.host_cost`). `ShapeCache` follows what the process has run and names the
figure a new shape pays: the trace's `new_shape` attrs mark (`maya.emulator.attrs.NEW_SHAPE`).

A size that a data-dependent op chose (`maya.emulator.recorder`) stands for a size the data sets anew
each step: two ops share it only when it comes from the same data-dependent call (an expert's w1 and
w3 GEMMs on its tokens), so a later step's routing is a new shape again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from maya.emulator.attrs import TensorMeta

GEMM_OPERAND = {
    "aten::mm": 0, "aten::bmm": 0, "aten::addmm": 1, "aten::baddbmm": 1, "aten::addbmm": 1,
    "aten::_addmm_activation": 1,
}
"""GEMM ops whose kernel cuBLAS chooses per shape -> the position of the operand whose last dimension
is the reduction (K) among the op's input tensors."""

CONV_OPS = {"aten::convolution": "conv", "aten::convolution_backward": "conv_backward"}
ATTENTION_OPS = {"aten::_scaled_dot_product_cudnn_attention": "cudnn_attention",
                 "aten::_scaled_dot_product_cudnn_attention_backward": "cudnn_attention_backward"}


def category(name: str, inputs: Sequence[TensorMeta], k_data_dependent: bool) -> str | None:
    """The host figure a new shape of op `name` pays (a key of the host profile's `new_shape_us`), or
    None for ops without a per-shape cache. `k_data_dependent`: a GEMM's reduction size is one the
    data chose (a weight gradient over an expert's tokens), whose lookup measured cheaper."""
    if not inputs:
        return None
    float32 = inputs[0][1] == "float32"
    if name in GEMM_OPERAND:
        if float32:
            return "gemm_float32"
        return "gemm_k" if k_data_dependent else "gemm"
    if name in CONV_OPS:
        return CONV_OPS[name] + ("_float32" if float32 else "")
    return ATTENTION_OPS.get(name)


class ShapeCache:
    """The shapes this process has run, per op, as cuBLAS and cuDNN key their caches."""

    def __init__(self) -> None:
        self._seen: set[tuple] = set()

    def first_run(self, name: str, inputs: Sequence[TensorMeta], attrs: dict, origins: frozenset[int]) -> bool:
        """Whether op `name` on `inputs` (and its non-tensor arguments `attrs`) runs for the first time;
        `origins` are the data-dependent calls whose sizes its inputs have."""
        key = (name, tuple(inputs), json.dumps(attrs, sort_keys=True, default=str), origins)
        if key in self._seen:
            return False
        self._seen.add(key)
        return True
