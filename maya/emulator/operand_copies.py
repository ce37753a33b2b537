"""Operand copies a CUDA kernel's C++ makes below the dispatcher, recorded under emulation.

Some CUDA implementations copy an operand that is not laid out as their kernel reads it, inside the
op, where no TorchDispatchMode sees the copy: cuDNN's convolution takes its operands contiguous in the
layout it picks, and layer norm's CUDA kernels take a contiguous input and output gradient
(aten/src/ATen/native/cuda/layer_norm_kernel.cu). The fake (meta) kernels copy nothing, so Maya makes
the same copies itself before the op, as the GPU would (a copy kernel and its memory), and hands the
op the copied operands: a U-Net's skip connections (`torch.cat`) give each convolution below them a
sliced gradient that the GPU copies twice a step, and a ConvNeXt block's layer norm runs on a permuted
activation that it copies in the forward and again in the backward.
"""

from __future__ import annotations

import torch

from maya.emulator.batch_norm import _suggested_memory_format
from maya.emulator.conv_layout import cudnn_memory_format
from maya.emulator.fake_mode import is_emulated_cuda

aten = torch.ops.aten


def _dense_cudnn(input: torch.Tensor, weight: torch.Tensor, transposed: bool, groups: int) -> bool:
    """Whether PyTorch runs this emulated-GPU convolution through `cudnn_convolution` and its
    backward, whose operand copies `_convolution` and `_convolution_backward` follow: a 2-D or 3-D,
    not transposed, not depthwise one (a depthwise convolution may take PyTorch's own kernels, 1-D
    ones go through a 2-D view; Maya records neither's copies)."""
    return (is_emulated_cuda(input) and weight.dim() in (4, 5) and input.dim() == weight.dim() and not transposed
            and not (groups > 1 and groups == input.shape[1]) and input.dtype is not torch.float64)


def _convolution(func, args: tuple, record) -> tuple:
    """`aten.convolution`'s args as cuDNN receives them (aten/src/ATen/native/Convolution.cpp and
    cudnn/ConvShared.cpp): the input, and in `cudnn_convolution` the weight, made contiguous in the
    layout `cudnn_memory_format` picks, each copy run through `record` (a context manager under which
    tensor ops are recorded). Other convolutions' args come back unchanged."""
    input, weight, *rest = args
    if not _dense_cudnn(input, weight, transposed=rest[4], groups=rest[6]):
        return args
    layout = cudnn_memory_format(input, weight)
    with record():
        input = input.contiguous(memory_format=layout)
        weight.contiguous(memory_format=layout)
    return (input, weight, *rest)


def _convolution_backward(func, args: tuple, record) -> tuple:
    """`aten.convolution_backward`'s args as cuDNN receives them: the input made contiguous in
    `cudnn_memory_format`'s layout where the weight gradient is wanted; the output gradient converted
    (`.to`) to the input's suggested layout where it suggests another; then for the input gradient the
    weight and the output gradient, and for the weight gradient the output gradient again (each
    contiguous() call copies its own) and the input, made contiguous in the layout
    `cudnn_conv_suggest_memory_format` picks of each pair."""
    grad, input, weight, *rest = args
    mask = rest[7]
    if not _dense_cudnn(input, weight, transposed=rest[4], groups=rest[6]):
        return args
    with record():
        if mask[1]:
            input = input.contiguous(memory_format=cudnn_memory_format(input, weight))
        if _suggested_memory_format(grad) != _suggested_memory_format(input):
            grad = grad.to(memory_format=_suggested_memory_format(input))
        operands = []  # the output gradient as each pass takes it
        if mask[0]:
            layout = cudnn_memory_format(grad, weight)
            weight.contiguous(memory_format=layout)
            operands.append(grad.contiguous(memory_format=layout))
        if mask[1]:
            layout = cudnn_memory_format(input, grad)
            operands.append(grad.contiguous(memory_format=layout))
            input = input.contiguous(memory_format=layout)
    return (operands[0] if operands else grad, input, weight, *rest)


def _layer_norm(func, args: tuple, record) -> tuple:
    """`native_layer_norm` and its backward take `input.expect_contiguous()`, and the backward's
    kernel a contiguous output gradient (`dY.contiguous()`): a copy of each that is not contiguous.
    An H200 profile of torch_transformer_bf16 (benchmarks/gpu/op_times_h200) has 8 `contiguous` under
    its 16 layer-norm backwards, the 8 whose gradient Maya's trace shows strided."""
    backward = func is aten.native_layer_norm_backward.default
    positions = (0, 1) if backward else (0,)  # (dY, input) of the backward; input of the forward
    if not is_emulated_cuda(args[positions[-1]]):
        return args
    args = list(args)
    with record():
        for i in positions:
            if not args[i].is_contiguous():
                args[i] = args[i].contiguous()
    return tuple(args)


_COPIERS = {
    aten.convolution.default: _convolution,
    aten.convolution_backward.default: _convolution_backward,
    aten.native_layer_norm.default: _layer_norm,
    aten.native_layer_norm_backward.default: _layer_norm,
}

COPYING_OPS = frozenset(_COPIERS)
"""The ops whose CUDA implementations copy operands below the dispatcher (`copied_operands`)."""


def copied_operands(func, args: tuple, record) -> tuple:
    """`args` of `func` (one of `COPYING_OPS`) as its CUDA kernels receive them, each copy the CUDA
    implementation makes run through `record` (a context manager under which tensor ops are recorded)."""
    return _COPIERS[func](func, args, record)
