"""Matmul features: leading-dimension alignments computed by hand from shapes and strides."""

import json

import pyarrow as pa
import pytest

from maya.estimator.features import extract_features
from maya.hardware import load_gpu


def _row(op: str, shapes: list, strides: list, out: list, dtype: str) -> dict:
    return {
        "op": op, "input_shapes": shapes, "input_dtypes": [dtype] * len(shapes), "input_strides": strides,
        "output_shapes": [out], "output_dtypes": [dtype], "output_strides": [[out[1], 1]],
        "attrs": json.dumps({}), "flops": 2.0 * out[0] * out[1] * shapes[-1][0], "bytes": 1,
    }  # fmt: skip


def test_leading_dimension_alignment_in_bytes():
    rows = [
        # bf16 A[64, 5789] row-major: rows 11578 B apart (2 * 5789, odd K): 2-byte aligned.
        # B[5789, 2304] row-major: 4608 B = 2^9 * 9, capped at 256 B. C[64, 2304]: the same.
        _row("aten::mm", [[64, 5789], [5789, 2304]], [[5789, 1], [2304, 1]], [64, 2304], "bfloat16"),
        # fp32 addmm, A[100, 64] stored transposed (column-major, ld = M = 100 -> 400 B = 16 * 25),
        # B[64, 24] transposed (ld = K = 64 -> 256 B), C[100, 24] (ld = 24 -> 96 B = 32 * 3).
        _row("aten::addmm", [[24], [100, 64], [64, 24]], [[1], [1, 100], [1, 64]], [100, 24], "float32"),
    ]
    f = extract_features(pa.Table.from_pylist(rows), load_gpu("h200"))
    odd, aligned = f.iloc[0], f.iloc[1]
    assert (odd["lda_align_bytes"], odd["ldb_align_bytes"], odd["ldc_align_bytes"]) == (1, 8, 8)
    assert odd["min_ld_align_bytes"] == 1 and odd["tma_aligned"] == 0 and odd["element_bytes"] == 2
    assert (aligned["trans_a"], aligned["trans_b"]) == (1, 1)
    assert (aligned["lda_align_bytes"], aligned["ldb_align_bytes"], aligned["ldc_align_bytes"]) == (4, 8, 5)
    assert aligned["min_ld_align_bytes"] == 4 and aligned["tma_aligned"] == 1 and aligned["element_bytes"] == 4
    assert 2 ** aligned["log2_m"] == pytest.approx(100) and 2 ** aligned["log2_k"] == pytest.approx(64)


def _conv_row(**attrs_extra) -> dict:
    """A bf16 3x3 convolution's trace row (8 x 64 x 32 x 32 in, 128 out), with extra top-level attrs keys."""
    args = [{"$t": 0}, {"$t": 1}, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1]
    return {
        "op": "aten::convolution", "input_shapes": [[8, 64, 32, 32], [128, 64, 3, 3]],
        "input_dtypes": ["bfloat16"] * 2, "input_strides": [[65536, 1024, 32, 1], [576, 9, 3, 1]],
        "output_shapes": [[8, 128, 32, 32]], "output_dtypes": ["bfloat16"], "output_strides": [[131072, 1024, 32, 1]],
        "flops": 2.0 * 8 * 128 * 1024 * 576, "bytes": 1, "attrs": json.dumps({"args": args, "kwargs": {}, **attrs_extra}),
    }  # fmt: skip


def test_convolution_rows_read_the_cudnn_benchmark_flag():
    # The same convolution signature with and without the attrs key the emulator writes under
    # torch.backends.cudnn.benchmark: only the feature differs.
    from maya.emulator.attrs import CUDNN_BENCHMARK

    rows = [_conv_row(), _conv_row(**{CUDNN_BENCHMARK: True})]
    f = extract_features(pa.Table.from_pylist(rows), load_gpu("h200"))
    assert list(f["cudnn_benchmark"]) == [0.0, 1.0]
    assert f.iloc[0]["log2_gemm_k"] == f.iloc[1]["log2_gemm_k"] == pytest.approx(9.169925)  # log2(64 * 9)


def test_convolution_rows_timed_on_an_idle_gpu_are_told_apart():
    # Profile rows say whether they were timed behind a GPU sleep; only an explicit false is "idle".
    # Trace rows (no such column) and rows of files written before the column (null) count as not idle.
    row = _conv_row()
    gpu = load_gpu("h200")
    profiled = pa.Table.from_pylist([{**row, "sleep_before": flag} for flag in (False, True, None)])
    assert list(extract_features(profiled, gpu)["timed_idle"]) == [1.0, 0.0, 0.0]
    assert list(extract_features(pa.Table.from_pylist([row]), gpu)["timed_idle"]) == [0.0]
    from maya.estimator.features import features_for_family

    assert "timed_idle" in features_for_family("conv") and "timed_idle" not in features_for_family("gemm")


def _elementwise_row(shapes: list, strides: list, out_strides: list, op: str = "aten::threshold_backward") -> dict:
    """A bf16 trace row of OP (by default threshold_backward: (grad, self) -> grad_input)."""
    out = shapes[0]
    return {
        "op": op, "input_shapes": shapes, "input_dtypes": ["bfloat16"] * len(shapes),
        "input_strides": strides, "output_shapes": [out], "output_dtypes": ["bfloat16"],
        "output_strides": [out_strides], "flops": 0.0, "bytes": 6.0 * 64 * 256 * 56 * 56, "attrs": json.dumps({}),
    }  # fmt: skip


def test_dense_elementwise_ops_get_the_shape_features_of_their_size():
    nchw, nchw_strides = [64, 256, 56, 56], [802816, 3136, 56, 1]
    nhwc_strides = [802816, 1, 14336, 256]  # channels-last
    rows = [
        _elementwise_row([nchw, nchw], [nchw_strides, nchw_strides], nchw_strides),
        _elementwise_row([nchw, nchw], [nhwc_strides, nhwc_strides], nhwc_strides),
        _elementwise_row([[200704, 256]] * 2, [[256, 1]] * 2, [256, 1]),
        # Mixed layouts (a contiguous grad, a channels-last input): not one flat loop, shapes kept.
        _elementwise_row([nchw, nchw], [nchw_strides, nhwc_strides], nchw_strides),
    ]
    f = extract_features(pa.Table.from_pylist(rows), load_gpu("h200"))
    shape = ["in0_rank", "log2_in0_d0", "log2_in0_d1", "log2_in0_d2", "log2_in0_d3", "log2_out0_d2", "log2_out0_d3",
             "layout", "contiguous"]
    flat = [1.0, 0.0, 0.0, 0.0, pytest.approx(25.6147098), 0.0, pytest.approx(25.6147098), "cc->c", 1.0]
    assert list(f.iloc[0][shape]) == list(f.iloc[1][shape]) == list(f.iloc[2][shape]) == flat  # log2(64*256*56*56)
    assert list(f.iloc[3][["in0_rank", "log2_in0_d1", "contiguous"]]) == [4.0, 8.0, 0.0]


def test_dense_channels_last_copies_get_the_shape_features_of_their_size():
    nchw, nchw_strides = [64, 256, 56, 56], [802816, 3136, 56, 1]
    nhwc_strides = [802816, 1, 14336, 256]
    rows = [
        _elementwise_row([nchw], [nhwc_strides], nhwc_strides, op="aten::clone"),  # same-layout clone: flat
        _elementwise_row([nchw], [nchw_strides], nchw_strides, op="aten::clone"),  # contiguous copy: shapes kept
        _elementwise_row([nchw], [nchw_strides], nhwc_strides, op="aten::clone"),  # layout conversion: kept
    ]
    f = extract_features(pa.Table.from_pylist(rows), load_gpu("h200"))
    assert list(f.iloc[0][["in0_rank", "log2_in0_d1", "log2_in0_d3", "layout", "contiguous"]]) == [
        1.0, 0.0, pytest.approx(25.6147098), "c-->c", 1.0]  # one input: its second and third letters absent
    assert list(f["in0_rank"].iloc[1:]) == [4.0, 4.0]
    assert list(f["log2_in0_d1"].iloc[1:]) == [8.0, 8.0]
