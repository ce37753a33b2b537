"""Mixture-of-experts grouped GEMMs (`aten::_grouped_mm`) estimated as the batched GEMMs they amount to.

`torch._grouped_mm(a, b, offs)` multiplies each group (expert) of rows of `a` by its own matrix in
one kernel launch; Hugging Face transformers 5 runs MoE experts with it (`integrations/moe.py`). The
profiles time no grouped GEMM, so each one is estimated as the `bmm` of its groups at their mean
size: 2-D x 3-D (the forward and the input gradient, [T, K] x [G, K, N]) as [G, T/G, K] x [G, K, N];
2-D x 2-D (the weight gradient, [M, T] x [T, N] -> [G, M, N]) as [G, M, T/G] x [G, T/G, N]; 3-D x
3-D as itself. Under Maya's uniform routing the groups are equal, so that is the work the grouped
kernel does, with the strides of its operands kept (their transposes). The GEMM model then times it.
On the H200 a bf16 grouped GEMM took 0.98-1.59x that batched GEMM's time, the small ones slowest
(`python benchmarks/gpu/grouped_mm_probe.py --summarize benchmarks/gpu/session27_h200/s26a/grouped_mm.json`);
no factor corrects for it yet.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from maya.emulator.rnn_kernels import contiguous_strides

GROUPED_GEMM_OPS = frozenset({"aten::_grouped_mm"})
"""Ops rewritten as `aten::bmm` rows before estimation."""


def _as_bmm(shapes: list, strides: list) -> tuple[list, list, list] | None:
    """(input shapes, input strides, output shape) of the bmm a grouped GEMM amounts to, or None."""
    if len(shapes) < 2:
        return None
    a, b = list(shapes[0]), list(shapes[1])
    sa, sb = list(strides[0]), list(strides[1])
    groups = shapes[2][0] if len(shapes) > 2 and len(shapes[2]) == 1 else None
    if len(a) == 2 and len(b) == 3:  # [T, K] x [G, K, N]: the rows of a split among the groups
        g = b[0]
        rows = math.ceil(a[0] / g)
        return [[g, rows, a[1]], b], [[rows * sa[0], sa[0], sa[1]], sb], [g, rows, b[2]]
    if len(a) == 2 and len(b) == 2 and groups:  # [M, T] x [T, N] -> [G, M, N]: T split among the groups
        g = groups
        depth = math.ceil(a[1] / g)
        return ([[g, a[0], depth], [g, depth, b[1]]], [[depth * sa[1], sa[0], sa[1]], [depth * sb[0], sb[0], sb[1]]],
                [g, a[0], b[1]])
    if len(a) == 3 and len(b) == 3:
        return [a, b], [sa, sb], [a[0], a[1], b[2]]
    return None


def as_batched_gemms(table: pa.Table) -> pa.Table:
    """`table` (trace or profile rows) with every grouped GEMM row made the `aten::bmm` row it amounts to."""
    grouped = pc.is_in(table.column("op"), value_set=pa.array(sorted(GROUPED_GEMM_OPS)))
    if not pc.any(grouped).as_py():  # the usual case, checked without leaving Arrow
        return table
    rows = np.flatnonzero(np.asarray(grouped.to_numpy(zero_copy_only=False), dtype=bool)).tolist()
    names = ("op", "input_shapes", "input_strides", "input_dtypes", "output_shapes", "output_strides")
    columns = {name: table.column(name).to_pylist() for name in names}
    for i in rows:
        bmm = _as_bmm(columns["input_shapes"][i], columns["input_strides"][i])
        if bmm is None:
            continue
        shapes, strides, out = bmm
        columns["op"][i] = "aten::bmm"
        columns["input_shapes"][i], columns["input_strides"][i] = shapes, strides
        columns["input_dtypes"][i] = columns["input_dtypes"][i][:2]
        columns["output_shapes"][i], columns["output_strides"][i] = [out], [list(contiguous_strides(out))]
    for name in names:
        table = table.set_column(table.column_names.index(name), name, pa.array(columns[name], type=table.schema.field(name).type))
    return table
