"""Group norm under emulation: the input made contiguous first, as on a CUDA GPU.

`torch.group_norm` (aten/src/ATen/native/group_norm.cpp, a composite) keeps a channels-last input's
memory format on the CPU and on PrivateUse1 devices, whose kernels read it, but calls `contiguous()`
on any other device: a CUDA GPU copies a channels-last activation to NCHW (one `clone` kernel, and
the copy is what autograd saves) before `native_group_norm`, whose output is then NCHW. The proxy
device is a PrivateUse1 device, so Maya makes the CUDA call itself.
"""

from __future__ import annotations

import math

import torch

from maya.emulator.fake_mode import is_emulated_cuda
from maya.emulator.patcher import Patcher

aten = torch.ops.aten


def install_group_norm(patcher: Patcher) -> None:
    """Replace `torch.group_norm` (what F.group_norm calls) with the CUDA path for emulated tensors."""
    original = torch.group_norm

    def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
        if not is_emulated_cuda(input) or input.dim() < 2 or input.shape[1] % num_groups:
            return original(input, num_groups, weight, bias, eps, cudnn_enabled)  # PyTorch's own checks
        n, c = input.shape[:2]
        return aten.native_group_norm(
            input.contiguous(),
            None if weight is None else weight.contiguous(),
            None if bias is None else bias.contiguous(),
            n, c, math.prod(input.shape[2:]), num_groups, eps,
        )[0]  # fmt: skip

    patcher.set(torch, "group_norm", group_norm)
