"""Convolution output layout under emulation: cuDNN's choice, not the proxy device's.

FakeTensor's convolution asks `torch._C._select_conv_backend` and
`torch._C._conv_determine_backend_memory_format` for the output's memory format. On the proxy
device of a CPU build those see no cuDNN and answer "contiguous", so a channels-last network's
convolutions returned NCHW outputs, and every op after them ran in the wrong layout. A GPU's cuDNN
backend follows `cudnn_conv_suggest_memory_format` (aten/src/ATen/native/ConvUtils.h): channels-last
when the input or the 4-D weight suggests channels-last, channels-last-3d likewise for 5-D weights,
contiguous for float64 and otherwise.
"""

from __future__ import annotations

import torch

from maya.emulator.batch_norm import _suggested_memory_format
from maya.emulator.fake_mode import is_emulated_cuda
from maya.emulator.patcher import Patcher


def cudnn_memory_format(input: torch.Tensor, weight: torch.Tensor) -> torch.memory_format:
    """The output layout cuDNN picks for a convolution of `input` by `weight`."""
    if torch.float64 in (input.dtype, weight.dtype):
        return torch.contiguous_format
    formats = (_suggested_memory_format(input), _suggested_memory_format(weight))
    if weight.dim() == 4 and torch.channels_last in formats:
        return torch.channels_last
    if weight.dim() == 5 and torch.channels_last_3d in formats:
        return torch.channels_last_3d
    return torch.contiguous_format


def install_conv_layout(patcher: Patcher) -> None:
    """Answer FakeTensor's layout question for emulated-GPU convolutions as cuDNN would."""
    original = torch._C._conv_determine_backend_memory_format

    def determine(input, weight, backend):
        if is_emulated_cuda(input):
            return cudnn_memory_format(input, weight)
        return original(input, weight, backend)

    patcher.set(torch._C, "_conv_determine_backend_memory_format", determine)
