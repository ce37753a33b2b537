"""Roofline cost model: the fallback for ops that no profile or learned model covers.

    duration_us = max(flops / (peak_flops_per_s * COMPUTE_EFFICIENCY),
                      bytes / (memory_bandwidth_bytes_per_s * MEMORY_EFFICIENCY)) * 1e6
                  + KERNEL_LATENCY_US

(Williams, Waterman and Patterson, "Roofline: an insightful visual performance model", CACM 2009.)
The peak rate is the tensor-core rate of the op's dtype for matmul/conv/attention (TF32 for float32
when allowed) and the CUDA-core float32 rate for everything else, which never runs on tensor cores.
"""

from __future__ import annotations

import numpy as np

from maya.estimator.families import TF32_FAMILIES
from maya.hardware import GpuSpec

COMPUTE_EFFICIENCY = 0.7
"""Fraction of peak FLOP/s a large kernel reaches: cuBLAS GEMMs on H100/A100 reach 65-80% of the
datasheet dense rate (NVIDIA "Matrix Multiplication Background" user guide, Fig. 5-7)."""

MEMORY_EFFICIENCY = 0.8
"""Fraction of peak HBM bandwidth a streaming kernel reaches: large elementwise and copy kernels
reach 80-90% of datasheet bandwidth on A100/H100 (STREAM-style copy, nvbandwidth)."""

KERNEL_LATENCY_US = 2.5
"""Smallest GPU time of any kernel, in microseconds: an empty kernel occupies the GPU for about
2-3 us between launch and completion on A100/H100 (CUDA event timing of a null kernel)."""

CUDA_CORE_RATE = "float32_cuda_core"
"""Catalog key of the non-tensor-core float32 rate; other families are costed at this rate."""


def peak_flops_per_s(
    gpu: GpuSpec, dtypes: np.ndarray, families: np.ndarray, *, allow_tf32: bool | np.ndarray = False
) -> np.ndarray:
    """Peak FLOP/s that bounds each op: tensor-core rate for its dtype or the CUDA-core rate.

    Args:
        gpu: catalog spec of the GPU.
        dtypes: object array of each op's compute dtype name (`bfloat16`).
        families: object array of each op's family (None when unknown).
        allow_tf32: whether float32 matmul/conv/attention may use TF32 tensor cores.

    Returns:
        float64 array of FLOP per second, one per op.
    """
    dtypes = np.asarray(dtypes, dtype=object)
    tensor_core = np.isin(np.asarray(families, dtype=object), list(TF32_FAMILIES))
    names = np.where(tensor_core & (dtypes == "float32") & np.asarray(allow_tf32), "tfloat32", dtypes)
    names = np.where(tensor_core, names, CUDA_CORE_RATE).astype(str)
    uniques, inverse = np.unique(names, return_inverse=True)
    rates = np.array([gpu.peak_flops_for(name) for name in uniques], dtype=np.float64)
    return rates[inverse]


def roofline_duration_us(
    flops: np.ndarray, bytes_: np.ndarray, peak_flops: np.ndarray, memory_bandwidth_bytes_per_s: float
) -> np.ndarray:
    """Roofline GPU time of each op in microseconds (formula in the module docstring); always > 0.

    Args:
        flops: floating-point operations per op.
        bytes_: bytes read plus written in device memory per op.
        peak_flops: peak FLOP/s bounding each op (`peak_flops_per_s`).
        memory_bandwidth_bytes_per_s: peak HBM bandwidth of the GPU.
    """
    flops = np.nan_to_num(np.maximum(np.asarray(flops, dtype=np.float64), 0.0))
    bytes_ = np.nan_to_num(np.maximum(np.asarray(bytes_, dtype=np.float64), 0.0))
    compute_s = flops / (np.asarray(peak_flops, dtype=np.float64) * COMPUTE_EFFICIENCY)
    memory_s = bytes_ / (memory_bandwidth_bytes_per_s * MEMORY_EFFICIENCY)
    return np.maximum(compute_s, memory_s) * 1e6 + KERNEL_LATENCY_US


def compute_bound(flops: np.ndarray, bytes_: np.ndarray, peak_flops: np.ndarray, gpu: GpuSpec) -> np.ndarray:
    """Whether each op's arithmetic intensity (FLOP/byte) reaches the GPU's ridge point.

    The ridge point is `peak_flops / memory_bandwidth_bytes_per_s`: above it an op is bounded by
    compute, below it by memory bandwidth. Ops that move no bytes count as compute-bound.
    """
    flops = np.asarray(flops, dtype=np.float64)
    bytes_ = np.asarray(bytes_, dtype=np.float64)
    ridge = np.asarray(peak_flops, dtype=np.float64) / gpu.memory_bandwidth_bytes_per_s
    return flops >= ridge * bytes_
