"""Convolution layouts under emulation: cuDNN's choice, not the proxy device's, and its copies.

FakeTensor's convolution asks `torch._C._select_conv_backend` and
`torch._C._conv_determine_backend_memory_format` for the output's memory format. On the proxy
device of a CPU build those see no cuDNN and answer "contiguous", so a channels-last network's
convolutions returned NCHW outputs, and every op after them ran in the wrong layout. A GPU's cuDNN
backend follows `cudnn_conv_suggest_memory_format` (aten/src/ATen/native/ConvUtils.h): channels-last
when the input or the 4-D weight suggests channels-last, channels-last-3d likewise for 5-D weights,
contiguous for float64 and otherwise.

cuDNN also takes its operands in that layout, and PyTorch copies any operand that is not
(`cudnn_operands`): a skip connection's `torch.cat` hands each convolution below it a gradient that is
a slice of the concatenation's, which the GPU copies before every backward.
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


def _dense_cudnn(input: torch.Tensor, weight: torch.Tensor, transposed: bool, groups: int) -> bool:
    """Whether PyTorch runs this emulated-GPU convolution through `cudnn_convolution` and its
    backward, whose operand copies `cudnn_operands` follows: a 2-D or 3-D, not transposed, not
    depthwise one (a depthwise convolution may take PyTorch's own kernels, 1-D ones go through a 2-D
    view; Maya records neither's copies)."""
    return (is_emulated_cuda(input) and weight.dim() in (4, 5) and input.dim() == weight.dim() and not transposed
            and not (groups > 1 and groups == input.shape[1]) and input.dtype is not torch.float64)


def cudnn_operands(func, args: tuple, record) -> tuple:
    """`args` of an emulated-GPU `aten.convolution` or `aten.convolution_backward` as cuDNN receives
    them, each copy PyTorch makes on the way run through `record` (a context manager under which
    tensor ops are recorded). aten/src/ATen/native/Convolution.cpp and cudnn/ConvShared.cpp:
    - forward: the input, and in `cudnn_convolution` the weight, made contiguous in the layout
      `cudnn_memory_format` picks;
    - backward: the input made contiguous in that layout where the weight gradient is wanted; the
      output gradient converted (`.to`) to the input's suggested layout where it suggests another;
      then for the input gradient the weight and the output gradient, and for the weight gradient
      the output gradient (again: each contiguous() call copies its own) and the input, made
      contiguous in the layout `cudnn_conv_suggest_memory_format` picks of each pair.
    Other convolutions' `args` come back unchanged."""
    aten = torch.ops.aten
    if func is aten.convolution.default:
        input, weight, *rest = args
        transposed, groups = rest[4], rest[6]
        if not _dense_cudnn(input, weight, transposed, groups):
            return args
        layout = cudnn_memory_format(input, weight)
        with record():
            input = input.contiguous(memory_format=layout)
            weight.contiguous(memory_format=layout)
        return (input, weight, *rest)
    if func is aten.convolution_backward.default:
        grad, input, weight, *rest = args
        transposed, groups, mask = rest[4], rest[6], rest[7]
        if not _dense_cudnn(input, weight, transposed, groups):
            return args
        with record():
            if mask[1]:
                input = input.contiguous(memory_format=cudnn_memory_format(input, weight))
            suggested = _suggested_memory_format(input)
            if _suggested_memory_format(grad) != suggested:
                grad = grad.to(memory_format=suggested)
            used = grad
            if mask[0]:
                layout = cudnn_memory_format(grad, weight)
                weight.contiguous(memory_format=layout)
                used = grad.contiguous(memory_format=layout)
            if mask[1]:
                layout = cudnn_memory_format(input, grad)
                weight_grad_operand = grad.contiguous(memory_format=layout)
                used = used if mask[0] else weight_grad_operand
                input = input.contiguous(memory_format=layout)
        return (used, input, weight, *rest)
    return args
