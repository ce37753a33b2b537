"""Output shapes of `nn.SyncBatchNorm`'s CUDA-only ops, which PyTorch gives neither a meta nor a CPU kernel.

`SyncBatchNorm` (torch/nn/modules/_functions.py) computes each rank's per-channel statistics, gathers
them from every rank with a collective, combines them, normalises, and in backward reduces the
gradients' per-channel sums, all-reduces them and applies them: five aten ops that exist for CUDA
only (aten/src/ATen/native/cuda/Normalization.cu), so the fake device could neither run them nor
shape their outputs. Their outputs are shaped here as those kernels allocate them:
- statistics (`batch_norm_stats`, `batch_norm_gather_stats_with_counts`, the sums of
  `batch_norm_backward_reduce`) are one value per channel in the input's accumulation type (float32
  for float16 and bfloat16 input), or in the statistics' own dtype once gathered;
- `batch_norm_elemt` and `batch_norm_backward_elemt` return a tensor like the input, in its suggested
  memory format (channels-last stays channels-last);
- `batch_norm_backward_reduce`'s weight and bias gradients are per channel in the weight's dtype, and
  only the outputs its three flags ask for exist (the others are undefined, None here).
The collectives between them are the fake process group's, recorded as any others.
"""

from __future__ import annotations

import torch


def _accumulation_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _per_channel(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return torch.empty((x.shape[1],), dtype=dtype, device=x._fake_device)


def _like_input(x: torch.Tensor) -> torch.Tensor:
    channels_last = {4: torch.channels_last, 5: torch.channels_last_3d}.get(x.dim())
    if channels_last is not None and not x.is_contiguous() and x.is_contiguous(memory_format=channels_last):
        return torch.empty_like(x, memory_format=channels_last)
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def batch_norm_stats(input, eps):
    dtype = _accumulation_dtype(input.dtype)
    return _per_channel(input, dtype), _per_channel(input, dtype)


def batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var, momentum, eps, counts):
    return _per_channel(input, mean.dtype), _per_channel(input, mean.dtype)


def batch_norm_elemt(input, weight, bias, mean, invstd, eps):
    return _like_input(input)


def batch_norm_backward_reduce(grad_out, input, mean, invstd, weight, input_g, weight_g, bias_g):
    weight_dtype = mean.dtype if weight is None else weight.dtype
    return (
        _per_channel(input, mean.dtype) if input_g else None,
        _per_channel(input, mean.dtype) if input_g else None,
        _per_channel(input, weight_dtype) if weight_g else None,
        _per_channel(input, weight_dtype) if bias_g else None,
    )


def batch_norm_backward_elemt(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu, count):
    return _like_input(input)


SHAPES = {
    "aten::batch_norm_stats": batch_norm_stats,
    "aten::batch_norm_gather_stats_with_counts": batch_norm_gather_stats_with_counts,
    "aten::batch_norm_elemt": batch_norm_elemt,
    "aten::batch_norm_backward_reduce": batch_norm_backward_reduce,
    "aten::batch_norm_backward_elemt": batch_norm_backward_elemt,
}
"""aten op name -> function of the op's arguments returning its outputs, shaped as the CUDA kernel does."""
