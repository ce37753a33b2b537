"""Float8 GEMMs (`torch._scaled_mm`): their FLOPs, and the roofline at the catalog's float8 rate,
since no profile times them (`estimate.UNPROFILED_DTYPES`)."""

import logging

import pyarrow.compute as pc
import pytest

import maya
from maya.estimator.estimate import estimate_trace
from maya.estimator.roofline import roofline_duration_us
from maya.hardware import load_gpu
from maya.trace import read_rank_trace

M, N, K = 1024, 768, 512


def test_float8_gemm_counts_its_flops_and_takes_the_float8_roofline_with_a_warning(scripts, tmp_path, caplog):
    s = maya.emulate(scripts / "float8_gemm.py", [], trace_dir=tmp_path / "t")
    assert s.exit_code == 0, s.error
    table = read_rank_trace(s.trace_dir, 0)
    mm = table.filter(pc.equal(table["op"], "aten::_scaled_mm"))
    assert mm.num_rows == 2
    assert mm["flops"].to_pylist() == [2 * M * N * K + M * N] * 2  # the products, then one scaling per output
    with caplog.at_level(logging.WARNING, logger="maya.estimator.estimate"):
        df = estimate_trace(mm, gpu="h200")
    assert "roofline used: aten::_scaled_mm float8_e4m3fn (2)" in caplog.text
    gpu = load_gpu("h200")
    assert gpu.peak_flops_for("float8_e4m3fn") == gpu.peak_flops_for("float8_e5m2") == 1978.9e12
    expected = roofline_duration_us(df["flops"].to_numpy(), df["bytes"].to_numpy(), 1978.9e12,
                                    gpu.memory_bandwidth_bytes_per_s)
    assert df["duration_us"].to_numpy() == pytest.approx(expected)
    assert (df["estimate_source"] == "roofline").all() and df["low_confidence"].all()
    # Other dtypes keep their own rates; one the catalog lacks takes float32's.
    assert gpu.peak_flops_for("bfloat16") == 989.4e12 and gpu.peak_flops_for("int4") == gpu.peak_flops_for("float32")


def test_an_a100_refuses_float8_gemms_as_cuda_does(scripts, tmp_path):
    s = maya.emulate(scripts / "float8_gemm.py", [], gpu="a100", trace_dir=tmp_path / "t")
    assert s.exit_code == 1
    assert "RuntimeError: torch._scaled_mm is only supported on CUDA devices with compute capability >= 9.0 or 8.9" in s.error
