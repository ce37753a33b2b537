"""Batch norm under emulation: `cudnn_batch_norm` wherever a GPU would pick cuDNN.

`torch.batch_norm` runs `_batch_norm_impl_index` (aten/src/ATen/native/Normalization.cpp), which
chooses cuDNN for CUDA tensors and PyTorch's native kernel otherwise; on the proxy device it always
took the native kernel. The H200 ran every batch norm of the fp32 ResNet-50 as
`aten::cudnn_batch_norm` / `cudnn_batch_norm_backward` (benchmarks/gpu/op_timelines_h200/resnet50_fp32.json),
so Maya makes PyTorch's choice itself and calls the cuDNN op directly. Rules reproduced (PyTorch 2.11):
- not for bfloat16 input or weight, and float16 input only with float32 weight (AMP's case);
- weight and bias defined; running statistics both defined, or both absent in training;
- at least 3 dimensions, batch at most 880,801 in training and 65,535 in evaluation;
- `torch.backends.cudnn.enabled` (the `cudnn_enabled` argument) and eps >= CUDNN_BN_MIN_EPSILON.
The input is made contiguous in its suggested memory format first, as on the GPU.
"""

from __future__ import annotations

import torch

from maya.emulator.fake_mode import is_emulated_cuda
from maya.emulator.patcher import Patcher

aten = torch.ops.aten

CUDNN_BN_MIN_EPSILON = 0.0
"""cuDNN's smallest accepted batch-norm epsilon (cudnn_ops.h, cuDNN 8 and 9)."""

MAX_TRAINING_BATCH = 880801
"""Largest batch `_batch_norm_impl_index` sends to cuDNN in training (spatial mode)."""

MAX_EVAL_BATCH = 65535
"""Largest batch it sends to cuDNN in evaluation."""


def uses_cudnn(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor | None,
    running_var: torch.Tensor | None,
    training: bool,
    eps: float,
    cudnn_enabled: bool,
) -> bool:
    """Whether a CUDA GPU with cuDNN runs this batch norm as `cudnn_batch_norm`."""
    if weight is None or bias is None or not cudnn_enabled or eps < CUDNN_BN_MIN_EPSILON:
        return False
    if torch.bfloat16 in (input.dtype, weight.dtype):
        return False
    if input.dtype is torch.float16 and weight.dtype is not torch.float32:
        return False
    if (running_mean is None) != (running_var is None) or (running_mean is None and not training):
        return False
    if input.dim() < 3:
        return False
    return input.shape[0] <= (MAX_TRAINING_BATCH if training else MAX_EVAL_BATCH)


def install_batch_norm(patcher: Patcher) -> None:
    """Replace `torch.batch_norm` (what F.batch_norm calls) with the GPU's cuDNN choice."""
    original = torch.batch_norm

    def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
        if not is_emulated_cuda(input) or not uses_cudnn(
            input, weight, bias, running_mean, running_var, training, eps, cudnn_enabled
        ):
            return original(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled)
        contiguous = input.contiguous(memory_format=_suggested_memory_format(input))
        return aten.cudnn_batch_norm(
            contiguous, weight.contiguous(), bias.contiguous(), running_mean, running_var, training, momentum, eps
        )[0]

    patcher.set(torch, "batch_norm", batch_norm)


def _suggested_memory_format(t: torch.Tensor) -> torch.memory_format:
    """C++ `suggest_memory_format()`: channels-last when the strides are, else contiguous."""
    for dim, layout in ((4, torch.channels_last), (5, torch.channels_last_3d)):
        if t.dim() == dim and not t.is_contiguous() and t.is_contiguous(memory_format=layout):
            return layout
    return torch.contiguous_format
