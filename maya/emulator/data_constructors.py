"""Tensors built from Python data on the emulated GPU inside a backward pass.

`torch.tensor(data, device="cuda")` (and `as_tensor`, `asarray`, `Tensor.new_tensor`) builds the
tensor in C++ and moves it to the device there. On Python's main thread the move reaches Maya's
dispatch modes; on the autograd engine's thread, where a custom autograd Function's backward (and
FlexAttention's) runs, it did not, and the call failed with "Could not run 'aten::empty_strided'
with arguments from the 'CUDA' backend". Inside a backward pass these constructors therefore build
the tensor on the host and move it with `.to()`, which records the same host-to-device copy.
"""

from __future__ import annotations

import torch

from maya.emulator.backend import is_cuda_like
from maya.emulator.fake_mode import is_emulated_cuda
from maya.emulator.out_of_memory import in_backward
from maya.emulator.patcher import Patcher


def _on_host(original, data, device, kwargs: dict) -> torch.Tensor:
    """`original(data, **kwargs)` built on the host, then moved to `device` (requires_grad kept)."""
    requires_grad = kwargs.pop("requires_grad", False)
    kwargs.pop("pin_memory", None)
    t = original(data, **kwargs, device="cpu").to(device)
    return t.requires_grad_() if requires_grad else t


def install_data_constructors(patcher: Patcher) -> None:
    """Route the data constructors through the host inside a backward pass (module docstring)."""
    for name in ("tensor", "as_tensor", "asarray"):
        original = getattr(torch, name)

        def construct(data, *args, _original=original, **kwargs):
            if args:  # as_tensor(data, dtype, device): name the positional ones
                kwargs = {**dict(zip(("dtype", "device"), args)), **kwargs}
            device = kwargs.pop("device", None)
            if isinstance(data, torch.Tensor) or not is_cuda_like(device) or not in_backward():
                return _original(data, **kwargs, **({} if device is None else {"device": device}))
            return _on_host(_original, data, device, kwargs)

        patcher.set(torch, name, construct)

    new_tensor = torch.Tensor.new_tensor

    def new_tensor_on_host(self, data, *args, **kwargs):
        if args:
            kwargs = {**dict(zip(("dtype", "device"), args)), **kwargs}
        device = kwargs.pop("device", None)
        target = self.device if device is None else device
        if isinstance(data, torch.Tensor) or not in_backward() or not (is_cuda_like(target) or is_emulated_cuda(self)):
            return new_tensor(self, data, **kwargs, **({} if device is None else {"device": device}))
        kwargs.setdefault("dtype", self.dtype)
        return _on_host(torch.tensor, data, target, kwargs)

    patcher.set(torch.Tensor, "new_tensor", new_tensor_on_host)
