"""Features of one op for the learned GPU-time models, computed from trace-row columns.

`extract_features` turns trace or profile rows into one feature row each: sizes (FLOPs, bytes,
numel, leading dims, all log2-scaled), arithmetic intensity, dtype and memory layout as
categoricals, the GPU's peak rates, and family-specific shape parameters (matmul M/N/K/batch and
transpose layout, convolution parameters, attention B/H/Sq/Sk/D/causal/GQA). Shapes and strides are
unpacked from Arrow buffers in bulk (`TensorColumn`); only the convolution and attention rows, whose
parameters live in `attrs`, are read one by one. Callers dedupe by signature key first, so this runs
once per distinct op signature, not once per trace row.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from maya.emulator.attrs import CUDNN_BENCHMARK
from maya.estimator.families import CONV, COPY, ELEMENTWISE, GEMM, OP_FAMILIES, RNN, SDPA, SDPA_ARGS, families_of  # noqa: F401 (re-export)
from maya.estimator.roofline import peak_flops_per_s, roofline_duration_us
from maya.estimator.tensor_columns import MAX_RANK, TensorColumn, as_arrow, list_parts
from maya.hardware import GpuSpec

FEATURE_COLUMNS = (
    "op", "input_shapes", "input_dtypes", "input_strides", "output_shapes", "output_dtypes",
    "output_strides", "attrs", "flops", "bytes", "allow_tf32", "sleep_before",
)
"""Trace/profile columns that features are computed from (`allow_tf32` and the profiles'
`sleep_before` are optional)."""

CATEGORICAL_FEATURES = ("op", "dtype", "out_dtype", "layout")
"""Features CatBoost treats as categories."""

COMMON_FEATURES = (
    *CATEGORICAL_FEATURES,
    "log2_flops", "log2_bytes", "log2_intensity", "log2_numel_in", "log2_numel_out", "log2_numel_max",
    "log2_index_numel", "n_inputs", "n_outputs", "in0_rank", "log2_in0_d0", "log2_in0_d1", "log2_in0_d2",
    "log2_in0_d3", "log2_out0_d2", "log2_out0_d3", "log2_reduction_ratio", "contiguous", "broadcast",
    "log2_peak_tflops", "log2_memory_bandwidth_GBps", "log2_roofline_us",
)
"""Features every family's model sees."""

GEMM_FEATURES = (
    "log2_m", "log2_n", "log2_k", "log2_batch", "trans_a", "trans_b", "align_m", "align_n", "align_k",
    "has_bias", "lda_align_bytes", "ldb_align_bytes", "ldc_align_bytes", "min_ld_align_bytes", "tma_aligned",
    "element_bytes",
)
"""Matmul M/N/K/batch, transposes and alignment. The leading-dimension alignments are in bytes
(log2, up to 256 B): Hopper's TMA-based cuBLAS kernels need 16-byte-aligned rows of A, B and C, so a
bf16 GEMM with an odd K (A's rows 2*K bytes apart) falls back to slower kernels (CUDA C++ Programming
Guide, "Tensor Memory Access": global address and strides must be multiples of 16 bytes)."""
CONV_FEATURES = (
    "log2_batch", "log2_c_in", "log2_c_out", "log2_spatial_in", "log2_spatial_out", "kernel_numel",
    "stride_prod", "dilation_prod", "log2_groups", "transposed", "channels_last", "conv_dims",
    "is_backward", "output_mask", "log2_gemm_m", "log2_gemm_n", "log2_gemm_k", "align_c_in", "align_c_out",
    "align_h_in", "log2_h_in", "depthwise", "cudnn_benchmark", "timed_idle",
)
"""Convolution parameters, and the implicit GEMM cuDNN runs (M = N*Ho*Wo, N = Cout/groups,
K = Cin/groups*kernel) with the power-of-two alignment of its channel and spatial sizes; whether
cuDNN autotuned the algorithm (`torch.backends.cudnn.benchmark`) or its heuristics chose it; and
`timed_idle`: 1 for a profile row timed on an idle GPU (`sleep_before` false: every convolution
profile before session 19), 0 otherwise. A trace row has no such column and gets 0: it is estimated
as `maya profile` now times convolutions, behind a GPU sleep, as in a step whose host runs ahead.
With it, the fit's held-out sleep-timed rows went 11.7% / 22.1% -> 9.7% / 22.0% (median /
time-weighted) and the idle ones 13.7% / 23.5% -> 13.9% / 23.5% (benchmarks/results/fit_choices_h200.md)."""
SDPA_FEATURES = (
    "log2_batch", "heads_q", "heads_kv", "log2_seq_q", "log2_seq_k", "head_dim", "causal", "gqa_ratio",
    "has_mask", "dropout", "is_backward",
)
RNN_FEATURES = (
    "rnn_mode", "log2_hidden", "log2_input_size", "num_layers", "bidirectional", "log2_seq", "log2_batch",
    "is_backward", "log2_cells", "log2_flops_per_cell", "log2_batch_hidden",
)

FAMILY_FEATURES: dict[str, tuple[str, ...]] = {
    GEMM: COMMON_FEATURES + GEMM_FEATURES,
    CONV: COMMON_FEATURES + CONV_FEATURES,
    SDPA: COMMON_FEATURES + SDPA_FEATURES,
    RNN: COMMON_FEATURES + RNN_FEATURES,
}
"""Feature list of each family's model; families not listed use `COMMON_FEATURES`."""
FAMILY_FEATURE_NAMES = frozenset(name for names in (COMMON_FEATURES, *FAMILY_FEATURES.values()) for name in names)
"""Every feature `extract_features` computes for some family's model."""

FLOATING_DTYPES = frozenset(
    {"float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
     "float8_e5m2fnuz", "complex64", "complex128"}
)
INTEGER_DTYPES = frozenset({"int64", "int32", "int16", "int8", "uint8", "bool"})
DTYPE_SIZE_BYTES = {
    "float64": 8, "complex128": 16, "complex64": 8, "float32": 4, "int64": 8, "int32": 4, "float16": 2,
    "bfloat16": 2, "int16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1,
    "int8": 1, "uint8": 1, "bool": 1,
}
"""Bytes per element of each dtype name (4 for names not listed)."""

# Layout code of one tensor: which cheap pattern its strides follow.
_LAYOUT_LETTERS = np.array(["-", "c", "t", "l", "e", "s"])
_ABSENT, _CONTIGUOUS, _TRANSPOSED, _CHANNELS_LAST, _EXPANDED, _STRIDED = range(6)

# (A, B) input positions of each matmul; `linear` takes its weight as [N, K].
_GEMM_OPERANDS = {"aten::addmm": (1, 2), "aten::baddbmm": (1, 2), "aten::addbmm": (1, 2),
                  "aten::addmv": (1, 2), "aten::_addmm_activation": (1, 2)}
_GEMM_BIAS_OPS = frozenset({*_GEMM_OPERANDS, "aten::linear"})

# Argument positions in the aten schema: (input, weight, stride, padding, dilation, transposed,
# groups, output_mask); None where the schema has no such argument.
_CONV_ARGS = {
    "aten::convolution": (0, 1, 3, 4, 5, 6, 8, None),
    "aten::_convolution": (0, 1, 3, 4, 5, 6, 8, None),
    "aten::conv1d": (0, 1, 3, 4, 5, None, 6, None),
    "aten::conv2d": (0, 1, 3, 4, 5, None, 6, None),
    "aten::conv3d": (0, 1, 3, 4, 5, None, 6, None),
    "aten::cudnn_convolution": (0, 1, 3, 2, 4, None, 5, None),
    "aten::conv_transpose1d": (0, 1, 3, 4, 7, True, 6, None),
    "aten::conv_transpose2d": (0, 1, 3, 4, 7, True, 6, None),
    "aten::conv_transpose3d": (0, 1, 3, 4, 7, True, 6, None),
    "aten::convolution_backward": (1, 2, 4, 5, 6, 7, 9, 10),
}
# Position of `mode` in each cuDNN RNN op; hidden_size, proj_size, num_layers, batch_first follow it,
# then dropout, train, bidirectional, batch_sizes.
_RNN_MODE_ARG = {"aten::_cudnn_rnn": 6, "aten::_cudnn_rnn_backward": 10}


def _log2(x: np.ndarray) -> np.ndarray:
    return np.log2(np.maximum(np.asarray(x, dtype=np.float64), 1.0))


def _first_dtype(offsets: np.ndarray, values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Per row, the first dtype in `values` where `wanted` is True, else "" (vectorised)."""
    rows = len(offsets) - 1
    owner = np.repeat(np.arange(rows), np.diff(offsets))
    hits = np.flatnonzero(wanted)
    out = np.full(rows, "", dtype=object)
    # Reverse so that, for rows with several hits, the first one is written last and wins.
    out[owner[hits][::-1]] = values[hits][::-1]
    return out


def _layout_codes(dims: np.ndarray, strides: np.ndarray, rank: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Layout code per tensor from right-aligned dims (padded 1) and strides (padded 0)."""

    def contiguous(d: np.ndarray, s: np.ndarray) -> np.ndarray:
        expected = np.ones_like(d)
        for j in range(MAX_RANK - 2, -1, -1):
            expected[:, j] = expected[:, j + 1] * d[:, j + 1]
        return np.all((s == expected) | (d == 1), axis=1)

    swap = list(range(MAX_RANK - 2)) + [MAX_RANK - 1, MAX_RANK - 2]
    nhwc = list(range(MAX_RANK - 4)) + [MAX_RANK - 4, MAX_RANK - 2, MAX_RANK - 1, MAX_RANK - 3]
    codes = np.full(len(rank), _STRIDED, dtype=np.int64)
    codes[(rank == 4) & contiguous(dims[:, nhwc], strides[:, nhwc])] = _CHANNELS_LAST
    codes[(rank >= 2) & contiguous(dims[:, swap], strides[:, swap])] = _TRANSPOSED
    codes[np.any((strides == 0) & (dims > 1), axis=1)] = _EXPANDED
    codes[contiguous(dims, strides)] = _CONTIGUOUS
    codes[~present] = _ABSENT
    return codes


def _nth_code(column: TensorColumn, codes: np.ndarray, i: int) -> np.ndarray:
    """Per row, the layout code of its i-th tensor (`_ABSENT` when it has fewer)."""
    present = column.count > i
    if not len(codes):
        return np.full(len(present), _ABSENT)
    return np.where(present, codes[np.where(present, column.row_offsets[:-1] + i, 0)], _ABSENT)


def features_for_family(family: str) -> tuple[str, ...]:
    """The feature columns a family's model is trained on, in order."""
    return FAMILY_FEATURES.get(family, COMMON_FEATURES)


def _align_log2(x: np.ndarray, cap: int = 16) -> np.ndarray:
    """log2 of the largest power of two (up to `cap`) dividing x: tensor-core tiles want multiples of 8/16."""
    x = np.asarray(x, dtype=np.int64)
    return np.log2(np.where(x > 0, np.minimum(x & -x, cap), 1)).astype(np.float64)


def extract_features(
    data: pa.Table | pd.DataFrame, gpu: GpuSpec, *, allow_tf32: bool = False
) -> pd.DataFrame:
    """Feature rows for trace/profile rows, one per input row, in input order.

    Args:
        data: rows with `FEATURE_COLUMNS` (the trace-row columns).
        gpu: GPU whose peak rates become features (and bound the roofline feature).
        allow_tf32: TF32 setting for rows without an `allow_tf32` column.

    Returns:
        DataFrame with a `family` column (None for ops no family covers) and every feature of every
        family; pick a family's columns with `FAMILY_FEATURES.get(family, COMMON_FEATURES)`.
    """
    table = as_arrow(data, FEATURE_COLUMNS)
    rows = table.num_rows
    ops = np.asarray(table.column("op").to_numpy(zero_copy_only=False), dtype=object)
    family = families_of(ops)
    f: dict[str, np.ndarray] = {"family": family, "op": ops}

    in_shapes = TensorColumn.from_arrow(table.column("input_shapes"), pad=1)
    in_strides = TensorColumn.from_arrow(table.column("input_strides"), pad=0)
    out_shapes = TensorColumn.from_arrow(table.column("output_shapes"), pad=1)
    out_strides = TensorColumn.from_arrow(table.column("output_strides"), pad=0)

    # dtypes: the compute dtype is the first floating input (else the first output, else any input).
    in_offsets, in_dtype_values = list_parts(table.column("input_dtypes"))
    in_dtypes = np.asarray(in_dtype_values.fill_null("").to_numpy(zero_copy_only=False), dtype=object)
    out_offsets, out_dtype_values = list_parts(table.column("output_dtypes"))
    out_dtypes = np.asarray(out_dtype_values.fill_null("").to_numpy(zero_copy_only=False), dtype=object)
    floating = np.isin(in_dtypes, list(FLOATING_DTYPES))
    out0_dtype = _first_dtype(out_offsets, out_dtypes, np.ones(len(out_dtypes), dtype=bool))
    dtype = _first_dtype(in_offsets, in_dtypes, floating)
    dtype = np.where(dtype == "", out0_dtype, dtype)
    dtype = np.where(dtype == "", _first_dtype(in_offsets, in_dtypes, np.ones(len(in_dtypes), bool)), dtype)
    f["dtype"] = np.where(dtype == "", "none", dtype).astype(object)
    f["out_dtype"] = np.where(out0_dtype == "", "none", out0_dtype).astype(object)

    # Sizes.
    in_numel = np.prod(in_shapes.dims, axis=1)
    out_numel = np.prod(out_shapes.dims, axis=1)
    index_numel = np.where(np.isin(in_dtypes, list(INTEGER_DTYPES)), in_numel, 0)
    flops = np.asarray(table.column("flops").fill_null(0), dtype=np.float64)
    bytes_ = np.asarray(table.column("bytes").fill_null(0), dtype=np.float64)
    f["log2_flops"] = _log2(flops)
    f["log2_bytes"] = _log2(bytes_)
    f["log2_intensity"] = np.log2((flops + 1.0) / (bytes_ + 1.0))
    f["log2_numel_in"] = _log2(in_shapes.row_sum(in_numel))
    f["log2_numel_out"] = _log2(out_shapes.row_sum(out_numel))
    f["log2_numel_max"] = _log2(in_shapes.row_max(in_numel))
    f["log2_index_numel"] = _log2(in_shapes.row_sum(index_numel))
    f["n_inputs"] = in_shapes.count.astype(np.float64)
    f["n_outputs"] = out_shapes.count.astype(np.float64)

    in0, in0_rank, _ = in_shapes.tensor(0, pad=1)
    out0, _, _ = out_shapes.tensor(0, pad=1)
    f["in0_rank"] = in0_rank.astype(np.float64)
    for j in range(4):
        f[f"log2_in0_d{j}"] = _log2(in0[:, MAX_RANK - 4 + j])
    f["log2_out0_d2"] = _log2(out0[:, MAX_RANK - 2])
    f["log2_out0_d3"] = _log2(out0[:, MAX_RANK - 1])
    f["log2_reduction_ratio"] = _log2(np.prod(in0, axis=1)) - _log2(np.prod(out0, axis=1))

    # Layout: one letter per tensor for the first three inputs and the first output ("cc-" > "c").
    in_codes = _layout_codes(in_shapes.dims, in_strides.dims, in_shapes.rank, np.ones(len(in_numel), bool))
    out_codes = _layout_codes(out_shapes.dims, out_strides.dims, out_shapes.rank, np.ones(len(out_numel), bool))
    letters = [_LAYOUT_LETTERS[_nth_code(in_shapes, in_codes, i)] for i in range(3)]
    out_letter = _LAYOUT_LETTERS[_nth_code(out_shapes, out_codes, 0)]
    layout = np.char.add(np.char.add(np.char.add(letters[0], letters[1]), np.char.add(letters[2], ">")), out_letter)
    f["layout"] = layout.astype(object)
    f["contiguous"] = (in_shapes.row_sum(in_codes != _CONTIGUOUS) == 0).astype(np.float64)
    # Broadcast: an expanded input, or an elementwise input smaller than the output.
    min_in = -in_shapes.row_max(-in_numel)
    smaller = (family == ELEMENTWISE) & (in_shapes.count >= 2) & (min_in < np.prod(out0, axis=1))
    f["broadcast"] = ((in_shapes.row_sum(in_codes == _EXPANDED) > 0) | smaller).astype(np.float64)
    _flatten_dense(f, family, in_shapes, in_codes, in_numel, min_in, out_shapes, out_codes, out_numel)

    # GPU: peak rate for this op's dtype and family, bandwidth, and the roofline time they imply.
    if "allow_tf32" in table.column_names:
        tf32 = np.asarray(table.column("allow_tf32").fill_null(allow_tf32), dtype=bool)
    else:
        tf32 = np.full(rows, allow_tf32)
    peak = peak_flops_per_s(gpu, f["dtype"], family, allow_tf32=tf32)
    if "sleep_before" in table.column_names:  # false only where a profile says the GPU was idle
        f["timed_idle"] = np.asarray(pc.equal(table.column("sleep_before"), False).fill_null(False), dtype=np.float64)
    else:
        f["timed_idle"] = np.zeros(rows)
    f["log2_peak_tflops"] = np.log2(peak / 1e12)
    f["log2_memory_bandwidth_GBps"] = np.full(rows, np.log2(gpu.memory_bandwidth_bytes_per_s / 1e9))
    f["log2_roofline_us"] = np.log2(roofline_duration_us(flops, bytes_, peak, gpu.memory_bandwidth_bytes_per_s))

    f.update(_gemm_features(ops, family, in_shapes, in_strides, out_strides, f["dtype"]))
    for name in dict.fromkeys(CONV_FEATURES + SDPA_FEATURES + RNN_FEATURES):
        f.setdefault(name, np.full(rows, np.nan))
    attr_rows = np.flatnonzero(np.isin(family, [CONV, SDPA, RNN]))
    if len(attr_rows):
        _attr_features(table.take(pa.array(attr_rows)), attr_rows, f)
    # An RNN's cells run one after another: its time per cell, and the work of one cell.
    f["log2_cells"] = f["log2_seq"] + np.log2(f["num_layers"]) + f["bidirectional"]
    f["log2_flops_per_cell"] = f["log2_flops"] - f["log2_cells"]
    f["log2_batch_hidden"] = f["log2_batch"] + f["log2_hidden"]
    return pd.DataFrame(f)


def _flatten_dense(
    f: dict, family: np.ndarray, in_shapes: TensorColumn, in_codes: np.ndarray, in_numel: np.ndarray,
    min_in: np.ndarray, out_shapes: TensorColumn, out_codes: np.ndarray, out_numel: np.ndarray,
) -> None:
    """Give a dense elementwise op, or a dense channels-last copy, the shape features of a 1-D
    tensor of its size, in place.

    Dense: every input and output has the op's size and one layout, all contiguous or all
    channels-last. Such an op runs as one flat loop (TensorIterator coalesces the dimensions of
    operands whose strides agree), whatever its shape, while the profile grids time 2-D tensors: a
    CNN's 4-D activations were estimated from shape features no profile had (ResNet-50's fp32
    [64, 256, 56, 56] `threshold_backward`: 175 us, 3.4 TB/s, and 148 us since; measured in its
    training step, 144 us: `python benchmarks/calibration_report.py --top 200 --shapes
    benchmarks/gpu/session17_h200/s17a/op_shapes resnet50_fp32`).

    Copies only when channels-last: a transformer's contiguous 3-D and 4-D copies are estimated
    better from their own shapes (benchmarks/results/fit_choices_h200.md, session 20), but the only
    4-D channels-last copies the grids time are casts and layout conversions, so a same-layout
    channels-last clone (MobileNetV2's, before its in-place ReLU6) was estimated as a layout
    conversion: 800 us for three [128, 144, 56, 56] bf16 clones measured at 162 us, 231 us with
    this (`python benchmarks/calibration_report.py --top 60 --shapes benchmarks/gpu/op_times_h200
    mobilenet_v2_bf16_channels_last` at commits 44d5a87 and 372a155).
    """
    size = min_in  # each row's smallest input
    layouts = {_CONTIGUOUS: family == ELEMENTWISE, _CHANNELS_LAST: (family == ELEMENTWISE) | (family == COPY)}
    one_layout = np.zeros(len(family), dtype=bool)
    for code, families in layouts.items():
        all_in = in_shapes.row_sum(in_codes != code) == 0
        one_layout |= families & all_in & (out_shapes.row_sum(out_codes != code) == 0)
    dense = (one_layout & (in_shapes.count >= 1) & (out_shapes.count >= 1)
             & (in_shapes.row_max(in_numel) == size) & (out_shapes.row_max(out_numel) == size)
             & (-out_shapes.row_max(-out_numel) == size))
    if not dense.any():
        return
    flat = _log2(size[dense])
    f["in0_rank"][dense] = 1.0
    for j in range(3):
        f[f"log2_in0_d{j}"][dense] = 0.0
    f["log2_in0_d3"][dense] = flat
    f["log2_out0_d2"][dense] = 0.0
    f["log2_out0_d3"][dense] = flat
    f["layout"][dense] = np.char.replace(f["layout"][dense].astype(str), "l", "c").astype(object)
    f["contiguous"][dense] = 1.0


def target_base_us(features: pd.DataFrame, family: np.ndarray | str) -> np.ndarray:
    """Each row's base time in microseconds, the denominator of what its family's model predicts
    (`fit_report.TARGET`): the roofline time, and for a cuDNN RNN its cells (time steps x layers x
    directions), whose kernels run one after another, as one microsecond each (where readable).
    With that base (and the per-cell features) the RNN model's error on the fit's own held-out split
    went from 6.6% median / 11.5% time-weighted to 5.7% / 10.5% (`fit_report.json`, `maya fit`)."""
    roofline_us = np.exp2(features["log2_roofline_us"].to_numpy(dtype=float))
    cells = features["log2_cells"].to_numpy(dtype=float)
    rnn = (np.asarray(family, dtype=object) == RNN) & np.isfinite(cells)
    return np.where(rnn, np.exp2(np.where(rnn, cells, 0.0)), roofline_us)


def _gemm_features(
    ops: np.ndarray, family: np.ndarray, shapes: TensorColumn, strides: TensorColumn, out_strides: TensorColumn,
    dtype: np.ndarray,
) -> dict[str, np.ndarray]:
    """M, N, K, batch, transposes and alignments of matmul rows (NaN for other rows)."""
    rows = len(ops)
    base = np.array([op.split(".", 1)[0] for op in ops], dtype=object) if rows else ops
    a_index = np.array([_GEMM_OPERANDS.get(op, (0, 1))[0] for op in base], dtype=np.int64)
    is_linear = base == "aten::linear"
    a, a_rank, a_present = shapes.tensor(a_index, pad=1)
    b, b_rank, b_present = shapes.tensor(a_index + 1, pad=1)
    a_strides, _, _ = strides.tensor(a_index, pad=0)
    b_strides, _, _ = strides.tensor(a_index + 1, pad=0)
    c_strides, _, _ = out_strides.tensor(0, pad=0)
    k = a[:, -1]
    m = np.where(is_linear, np.prod(a[:, :-1], axis=1), np.where(a_rank >= 2, a[:, -2], 1))
    batch = np.where(is_linear, 1, np.prod(a[:, :-2], axis=1))
    n = np.where(is_linear, b[:, -2], np.where(b_rank >= 2, b[:, -1], 1))
    trans_a = _layout_codes(a, a_strides, a_rank, a_present) == _TRANSPOSED
    trans_b = _layout_codes(b, b_strides, b_rank, b_present) == _TRANSPOSED
    element_bytes = np.array([DTYPE_SIZE_BYTES.get(name, 4) for name in dtype], dtype=np.int64)
    # Leading dimension of a row- or column-major matrix: the larger of its last two strides.
    ld_align = {
        name: _align_log2(np.maximum(s[:, -1], s[:, -2]) * element_bytes, cap=256)
        for name, s in (("lda", a_strides), ("ldb", b_strides), ("ldc", c_strides))
    }
    min_ld_align = np.minimum(np.minimum(ld_align["lda"], ld_align["ldb"]), ld_align["ldc"])
    is_gemm = family == GEMM
    out = {
        "log2_m": _log2(m), "log2_n": _log2(n), "log2_k": _log2(k), "log2_batch": _log2(batch),
        "trans_a": trans_a.astype(np.float64), "trans_b": trans_b.astype(np.float64),
        "align_m": _align_log2(m), "align_n": _align_log2(n), "align_k": _align_log2(k),
        "has_bias": (np.isin(base, list(_GEMM_BIAS_OPS)) & (shapes.count >= 3)).astype(np.float64),
        "lda_align_bytes": ld_align["lda"], "ldb_align_bytes": ld_align["ldb"], "ldc_align_bytes": ld_align["ldc"],
        "min_ld_align_bytes": min_ld_align, "tma_aligned": (min_ld_align >= 4).astype(np.float64),
        "element_bytes": element_bytes.astype(np.float64),
    }
    return {name: np.where(is_gemm, value, np.nan) for name, value in out.items()}


def _arg(attrs: dict, position: int | None, name: str, default=None):
    """An argument by keyword name, else by schema position, else `default`."""
    kwargs = attrs.get("kwargs") or {}
    if name in kwargs:
        return kwargs[name]
    args = attrs.get("args") or []
    if position is not None and position < len(args):
        return args[position]
    return default


def _tensor_shape(value, shapes: list) -> list[int] | None:
    if isinstance(value, dict) and "$t" in value and value["$t"] < len(shapes):
        return shapes[value["$t"]]
    return None


def _prod(values) -> float:
    if isinstance(values, (int, float)):
        return float(values)
    return float(np.prod(values)) if values else 1.0


def _attr_features(table: pa.Table, rows: np.ndarray, f: dict[str, np.ndarray]) -> None:
    """Convolution, attention and RNN parameters, read from attrs one row at a time (few rows)."""
    for at, op, shapes, strides, out_shapes, attrs_text in zip(
        rows,
        table.column("op").to_pylist(),
        table.column("input_shapes").to_pylist(),
        table.column("input_strides").to_pylist(),
        table.column("output_shapes").to_pylist(),
        table.column("attrs").to_pylist(),
    ):
        try:
            attrs = json.loads(attrs_text or "{}")
        except json.JSONDecodeError:
            attrs = {}
        shapes, strides, out_shapes = shapes or [], strides or [], out_shapes or []
        base = op.split(".", 1)[0]
        values = _conv_values(base, attrs, shapes, strides, out_shapes) if base in _CONV_ARGS else None
        if base in SDPA_ARGS:
            values = _sdpa_values(base, attrs, shapes)
        if base in _RNN_MODE_ARG:
            values = _rnn_values(base, attrs, shapes)
        for name, value in (values or {}).items():
            f[name][at] = value


def _conv_values(base: str, attrs: dict, shapes: list, strides: list, out_shapes: list) -> dict | None:
    x_pos, w_pos, stride_pos, pad_pos, dil_pos, transposed_pos, groups_pos, mask_pos = _CONV_ARGS[base]
    x_arg, w_arg = _arg(attrs, x_pos, "input"), _arg(attrs, w_pos, "weight")
    x, w = _tensor_shape(x_arg, shapes), _tensor_shape(w_arg, shapes)
    if not x or not w or len(x) < 3:
        return None
    transposed = transposed_pos if isinstance(transposed_pos, bool) else bool(
        _arg(attrs, transposed_pos, "transposed", False))
    groups = int(_arg(attrs, groups_pos, "groups", 1) or 1)
    is_backward = base == "aten::convolution_backward"
    if is_backward:
        y = _tensor_shape(_arg(attrs, 0, "grad_output"), shapes) or []
    else:
        y = out_shapes[0] if out_shapes else []
    mask = _arg(attrs, mask_pos, "output_mask", [True, True, True]) if mask_pos is not None else []
    x_strides = strides[x_arg["$t"]] if x_arg["$t"] < len(strides) else []
    channels_last = len(x) == 4 and len(x_strides) == 4 and x_strides[1] == 1 and x[1] > 1
    c_out = w[1] * groups if transposed else w[0]
    spatial_out = _prod(y[2:]) if len(y) > 2 else np.nan
    return {
        "log2_gemm_m": np.log2(max(x[0] * spatial_out, 1)), "log2_gemm_n": np.log2(max(c_out / groups, 1)),
        "log2_gemm_k": np.log2(max(x[1] / groups * _prod(w[2:]), 1)),
        "align_c_in": _align64(x[1] // groups), "align_c_out": _align64(c_out // groups), "align_h_in": _align64(x[2]),
        "log2_h_in": np.log2(max(x[2], 1)), "depthwise": float(groups > 1 and groups == x[1]),
        "log2_batch": np.log2(max(x[0], 1)), "log2_c_in": np.log2(max(x[1], 1)),
        "log2_c_out": np.log2(max(w[1] * groups if transposed else w[0], 1)),
        "log2_spatial_in": np.log2(max(_prod(x[2:]), 1)),
        "log2_spatial_out": np.log2(max(_prod(y[2:]), 1)) if len(y) > 2 else np.nan,
        "kernel_numel": _prod(w[2:]), "stride_prod": _prod(_arg(attrs, stride_pos, "stride", 1)),
        "dilation_prod": _prod(_arg(attrs, dil_pos, "dilation", 1)), "log2_groups": np.log2(max(groups, 1)),
        "transposed": float(transposed), "channels_last": float(channels_last), "conv_dims": float(len(x) - 2),
        "is_backward": float(is_backward),
        "output_mask": float(sum(bool(bit) << i for i, bit in enumerate(mask or []))),
        "cudnn_benchmark": float(bool(attrs.get(CUDNN_BENCHMARK, False))),
    }


def _align64(x: int) -> float:
    """log2 of the largest power of two (up to 64) dividing x."""
    x = int(x)
    return float(np.log2(min(x & -x, 64))) if x > 0 else 0.0


def _sdpa_values(base: str, attrs: dict, shapes: list) -> dict | None:
    qkv_pos, mask_pos, dropout_pos, causal_pos, seq_major = SDPA_ARGS[base]
    q = _tensor_shape(_arg(attrs, qkv_pos, "query"), shapes)
    k = _tensor_shape(_arg(attrs, qkv_pos + 1, "key"), shapes)
    if not q or not k or len(q) != 4 or len(k) != 4:
        return None
    # [B, H, S, D] for the SDPA entry points, [B, S, H, D] for the raw flash/efficient kernels.
    (b, hq, sq, d), (_, hk, sk, _) = ((q[0], q[2], q[1], q[3]), (k[0], k[2], k[1], k[3])) if seq_major else (q, k)
    # is_causal; the raw efficient-attention kernels pass custom_mask_type (1, 2: causal) there.
    causal = _arg(attrs, causal_pos, "is_causal", False)
    mask = _arg(attrs, mask_pos, "attn_mask", None) if mask_pos is not None else None
    dropout = _arg(attrs, dropout_pos, "dropout_p", 0.0)
    return {
        "log2_batch": np.log2(max(b, 1)), "heads_q": float(hq), "heads_kv": float(hk),
        "log2_seq_q": np.log2(max(sq, 1)), "log2_seq_k": np.log2(max(sk, 1)), "head_dim": float(d),
        "causal": float(bool(causal)), "gqa_ratio": float(hq / max(hk, 1)),
        "has_mask": float(isinstance(mask, dict) and "$t" in mask),
        "dropout": float(dropout) if isinstance(dropout, (int, float)) else 0.0,
        "is_backward": float(base.endswith("_backward")),
    }


def _rnn_args(base: str, attrs: dict, shapes: list) -> tuple | None:
    """(mode, hidden, layers, bidirectional, steps, batch, input shape) of a cuDNN RNN op, or None."""
    at = _RNN_MODE_ARG[base]
    x = _tensor_shape(_arg(attrs, 0, "input"), shapes)
    args = attrs.get("args", [])
    if not x or len(args) <= at + 8:
        return None
    mode, hidden, _proj, layers, batch_first = args[at : at + 5]
    bidirectional, batch_sizes = args[at + 7], args[at + 8]
    if batch_sizes:  # packed: [tokens, features], one batch size per step
        steps, batch = len(batch_sizes), batch_sizes[0]
    else:
        steps, batch = (x[1], x[0]) if batch_first else (x[0], x[1])
    return mode, hidden, layers, bidirectional, steps, batch, x


def rnn_cells(op: str, attrs_text: str | None, input_shapes: list) -> int:
    """Time steps x layers x directions of a cuDNN RNN op (`aten::_cudnn_rnn` or its backward), the
    cells cuDNN launches kernels for one after another; 0 for any other op or unreadable arguments."""
    base = op.split(".", 1)[0]
    if base not in _RNN_MODE_ARG:
        return 0
    try:
        parsed = _rnn_args(base, json.loads(attrs_text or "{}"), list(input_shapes or []))
    except (json.JSONDecodeError, TypeError, ValueError):
        return 0
    if parsed is None:
        return 0
    _, _, layers, bidirectional, steps, _, _ = parsed
    return int(steps) * int(layers) * (2 if bidirectional else 1)


def _rnn_values(base: str, attrs: dict, shapes: list) -> dict | None:
    parsed = _rnn_args(base, attrs, shapes)
    if parsed is None:
        return None
    mode, hidden, layers, bidirectional, steps, batch, x = parsed
    return {
        "rnn_mode": float(mode), "log2_hidden": np.log2(max(hidden, 1)), "log2_input_size": np.log2(max(x[-1], 1)),
        "num_layers": float(layers), "bidirectional": float(bool(bidirectional)),
        "log2_seq": np.log2(max(steps, 1)), "log2_batch": np.log2(max(batch, 1)),
        "is_backward": float(base.endswith("_backward")),
    }
