"""`torch._grouped_mm` where CUDA runs its fallback: one GEMM per group after a sync.

On CUDA (aten/src/ATen/native/cuda/GroupedBlas.cpp, `_grouped_mm_cuda`) the grouped GEMM runs as one
CUTLASS kernel only for bfloat16 operands and output on a GPU of compute capability 9.0 or 10.0 (H100,
H200, B200). Otherwise (float32 or float16 weights, as a mixture-of-experts model kept in float32
gets, or an A100) it takes `_grouped_mm_fallback` (aten/src/ATen/native/GroupedMMUtils.h): the output
is allocated, the group offsets are copied to the host, which waits for the GPU, and each group is one
`mm` into its slice of the output (3-D by 3-D operands, which have no offsets: one `bmm`). Fake
tensors' own rule for the op checks for bfloat16 and refused the rest, although a GPU runs it.

`grouped_mm_fallback` records what that path runs. The offsets' values are known where the script
made them from Python data on the GPU (`ValueHints.exact`); otherwise the groups are taken as even,
the balanced routing Maya assumes elsewhere (docs/emulation.md, "Values are not computed").
"""

from __future__ import annotations

import torch

from maya.emulator.value_hints import ValueHints

FAST_PATH_CAPABILITIES = frozenset({(9, 0), (10, 0)})
"""Compute capabilities where bfloat16 grouped GEMMs run as one kernel (`_scaled_mm_allowed_device`
with sm90 and sm100 only)."""

_DTYPES = (torch.bfloat16, torch.float32, torch.float16)

SCALED_MM_REFUSED = ("torch._scaled_mm is only supported on CUDA devices with compute capability >= 9.0 or 8.9, "
                     "or ROCm MI300+")
"""What CUDA's `_scaled_mm` (float8 GEMMs: aten/src/ATen/native/cuda/Blas.cpp) raises on an older GPU."""


def scaled_mm_allowed(capability: tuple[int, int]) -> bool:
    """Whether a GPU of `capability` runs float8 GEMMs (`_scaled_mm_allowed_device`: 8.9 or 9.0 and up)."""
    return tuple(capability) >= (9, 0) or tuple(capability) == (8, 9)


def grouped_mm_falls_back(mat_a: torch.Tensor, mat_b: torch.Tensor, out_dtype=None, *,
                          capability: tuple[int, int]) -> bool:
    """Whether `_grouped_mm(mat_a, mat_b, ..., out_dtype)` takes CUDA's fallback on a GPU of `capability`."""
    bf16 = mat_a.dtype == mat_b.dtype == torch.bfloat16 and out_dtype in (None, torch.bfloat16)
    return not (bf16 and tuple(capability) in FAST_PATH_CAPABILITIES)


def _group_ends(values: ValueHints, offs: torch.Tensor, total: int) -> list[int]:
    exact = values.exact(offs)
    if exact is not None:
        return [int(v) for v in exact.reshape(-1).tolist()]
    groups = offs.shape[0]
    return [(g + 1) * total // groups for g in range(groups)]


def grouped_mm_fallback(values: ValueHints, mat_a: torch.Tensor, mat_b: torch.Tensor, offs=None, bias=None,
                        out_dtype=None) -> torch.Tensor:
    """The fallback's ops, run under the recorder (which records each); returns the output."""
    for name, t in (("mat_a", mat_a), ("mat_b", mat_b)):
        if t.dtype not in _DTYPES:
            raise RuntimeError(f"Expected {name} to be Float32, BFloat16 or Float16 matrix, got {t.dtype}")
        if t.dim() not in (2, 3):
            raise RuntimeError(f"{name} has to be 2 or 3d")
    a2, b2 = mat_a.dim() == 2, mat_b.dim() == 2
    if (not a2 or not b2) and mat_a.shape[-1] != mat_b.shape[-2]:
        raise RuntimeError("contraction dimension of mat_a and mat_b must match")
    if (offs is not None) != (a2 or b2):
        raise RuntimeError("Have to provide offsets if there is a 2d matrix, or no offset if both matrices are 3d")
    if offs is not None and (offs.dim() != 1 or offs.dtype != torch.int32):
        raise RuntimeError("Offsets have to be a 1-D int32 tensor")
    if bias is not None:
        raise RuntimeError("Bias not supported yet")
    dtype = out_dtype or mat_a.dtype
    if dtype != mat_a.dtype:
        raise RuntimeError("Grouped gemm output dtype must match `mat_a` dtype")
    if a2 and b2:
        size = (offs.shape[0], mat_a.shape[0], mat_b.shape[1])
    elif a2:
        size = (mat_a.shape[0], mat_b.shape[-1])
    elif b2:
        size = (mat_a.shape[1], mat_b.shape[1])
    else:
        size = (mat_a.shape[0], mat_a.shape[1], mat_b.shape[-1])
    # The output's rows padded to 16 bytes, as create_grouped_gemm_output_tensor lays them out.
    align = 16 // torch.empty((), dtype=dtype).element_size()
    padded = -(-size[-1] // align) * align
    stride = (padded, 1) if len(size) == 2 else (size[1] * padded, padded, 1)
    out = torch.empty_strided(size, stride, dtype=dtype, device=mat_a.device)
    if offs is None:
        torch.bmm(mat_a, mat_b, out=out)
        return out
    offs.cpu()  # the offsets read on the host: a copy the host waits for
    start = 0
    if a2 and not b2:
        for g, end in enumerate(_group_ends(values, offs, mat_a.shape[0])):
            torch.mm(mat_a[start:end], mat_b[g], out=out[start:end])
            start = end
    elif b2 and not a2:
        for g, end in enumerate(_group_ends(values, offs, mat_b.shape[1])):
            torch.mm(mat_a[g], mat_b[:, start:end], out=out[:, start:end])
            start = end
    else:
        for g, end in enumerate(_group_ends(values, offs, mat_a.shape[1])):
            torch.mm(mat_a[:, start:end], mat_b[start:end], out=out[g])
            start = end
    return out
