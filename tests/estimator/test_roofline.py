import numpy as np
import pytest

from maya.estimator.roofline import (
    COMPUTE_EFFICIENCY, KERNEL_LATENCY_US, MEMORY_EFFICIENCY, compute_bound, peak_flops_per_s, roofline_duration_us,
)
from maya.hardware import load_gpu


def test_roofline_by_hand_on_h200():
    h200 = load_gpu("h200")
    # bf16 GEMM 4096^3: 2 * 4096^3 FLOP at 989.4 TFLOP/s * 0.7, plus latency.
    flops = 2.0 * 4096**3
    peak = peak_flops_per_s(h200, np.array(["bfloat16"]), np.array(["gemm"]))
    assert peak[0] == pytest.approx(989.4e12)
    expected_us = flops / (989.4e12 * COMPUTE_EFFICIENCY) * 1e6 + KERNEL_LATENCY_US
    assert roofline_duration_us([flops], [3 * 2 * 4096**2], peak, h200.memory_bandwidth_bytes_per_s)[0] == (
        pytest.approx(expected_us))
    # 1 GiB copy: memory-bound at 4800 GB/s * 0.8.
    elementwise_peak = peak_flops_per_s(h200, np.array(["bfloat16"]), np.array(["copy"]))
    assert elementwise_peak[0] == pytest.approx(67e12)  # CUDA-core rate, not tensor cores
    expected_us = 2**30 / (4800e9 * MEMORY_EFFICIENCY) * 1e6 + KERNEL_LATENCY_US
    assert roofline_duration_us([0.0], [2**30], elementwise_peak, 4800e9)[0] == pytest.approx(expected_us)


def test_tf32_uses_tensor_core_rate_only_for_matmul_families():
    h200 = load_gpu("h200")
    peak = peak_flops_per_s(h200, np.array(["float32", "float32"]), np.array(["gemm", "elementwise"]), allow_tf32=True)
    assert peak.tolist() == [pytest.approx(494.7e12), pytest.approx(67e12)]


def test_roofline_never_returns_zero():
    times = roofline_duration_us([0.0, np.nan, -5.0], [0, 0, np.nan], np.array([1e12] * 3), 1e12)
    assert np.all(times >= KERNEL_LATENCY_US)


def test_compute_bound_uses_ridge_point():
    h200 = load_gpu("h200")
    ridge = 67e12 / 4800e9  # FLOP per byte
    bound = compute_bound([ridge * 1000 * 1.01, ridge * 1000 * 0.99], [1000, 1000], np.array([67e12] * 2), h200)
    assert bound.tolist() == [True, False]
