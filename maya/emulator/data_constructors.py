"""Tensors built from Python data on the emulated GPU inside a backward pass.

`torch.tensor(data, device="cuda")` (and `as_tensor`, `asarray`, `Tensor.new_tensor`) builds the
tensor in C++ and moves it to the device there. On Python's main thread the move reaches Maya's
dispatch modes; on the autograd engine's thread, where a custom autograd Function's backward (and
FlexAttention's) runs, it did not, and the call failed with "Could not run 'aten::empty_strided'
with arguments from the 'CUDA' backend". Inside a backward pass these constructors therefore build
the tensor on the host and move it with `.to()`, which records the same host-to-device copy.

Data that holds emulated GPU tensors (`torch.tensor([t.norm() for t in grads])`, Megatron-Core's
gradient norm without Apex) is read element by element on a GPU, one `.item()` each; C++ did those
reads below Maya's dispatch modes ("Could not run 'aten::_local_scalar_dense' with arguments from
the 'maya' backend"). So such elements are read with `.item()` first, which records each read and
answers it as any other (`maya.emulator.value_hints`).
"""

from __future__ import annotations

import torch

from maya.emulator.backend import is_cuda_like
from maya.emulator.fake_mode import is_emulated_cuda
from maya.emulator.out_of_memory import in_backward
from maya.emulator.patcher import Patcher


def _read_emulated_elements(data):
    """`data` with every emulated GPU tensor inside a list or tuple read as its `.item()` (module docstring)."""
    if not isinstance(data, (list, tuple)) or not _holds_emulated(data):
        return data
    return [d.item() if is_emulated_cuda(d) else _read_emulated_elements(d) for d in data]


def _holds_emulated(data) -> bool:
    return any(is_emulated_cuda(d) or (isinstance(d, (list, tuple)) and _holds_emulated(d)) for d in data)


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
            data = _read_emulated_elements(data)
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
