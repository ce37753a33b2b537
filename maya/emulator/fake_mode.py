"""`EmulatorFakeMode`: PyTorch's FakeTensorMode, adapted so that fake CUDA tensors can train.

Inside the fake mode's own dispatch, tensors report their real C++ device (`maya:0`), which keeps
FakeTensorMode's device propagation consistent. Everywhere else (user code, torch.nn, optimizers,
torch.utils.checkpoint, DDP) they report `cuda:N`. A depth counter tells the two apart.
"""

from __future__ import annotations

import threading

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

from maya.emulator.backend import INTERNAL_TYPE
from maya.emulator.patcher import Patcher
from maya.emulator.rnn_kernels import FUSED_RNN_KERNELS

_META = torch.device("meta")


class _DeviceView(threading.local):
    """Per-thread depth of fake-mode dispatch, and the CUDA device Python code should see."""

    def __init__(self) -> None:
        self.internal_depth = 0


_view = _DeviceView()
_user_device = [torch.device("cuda", 0)]


def set_user_device_index(index: int) -> None:
    """Set the CUDA index that emulated tensors report (`torch.cuda.set_device`)."""
    _user_device[0] = torch.device("cuda", index)


def user_device() -> torch.device:
    """The `cuda:N` device that emulated tensors report to Python code."""
    return _user_device[0]


class internal_devices:
    """Context manager: inside it, fake tensors report their C++ device (`maya:0`)."""

    __slots__ = ()

    def __enter__(self) -> None:
        _view.internal_depth += 1

    def __exit__(self, *exc: object) -> None:
        _view.internal_depth -= 1


class EmulatorFakeMode(FakeTensorMode):
    """FakeTensorMode that never materialises device tensors and reports proxy devices internally."""

    @property
    def avoid_device_init(self) -> bool:
        # Never constant-fold through a real device copy: the proxy device has no kernels.
        return True

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        _view.internal_depth += 1
        try:
            kernel = FUSED_RNN_KERNELS.get(func)
            if kernel is not None:
                with self:
                    return kernel(*args, **(kwargs or {}))
            return super().__torch_dispatch__(func, types, args, kwargs)
        finally:
            _view.internal_depth -= 1


def is_emulated_cuda(t: object) -> bool:
    """True when `t` is a fake tensor on the emulated GPU."""
    return isinstance(t, FakeTensor) and t._fake_device.type == INTERNAL_TYPE


def _device(self: FakeTensor) -> torch.device:
    if self.fake_mode.in_kernel_invocation:
        return _META
    d = self._fake_device
    if d.type == INTERNAL_TYPE and _view.internal_depth == 0:
        return _user_device[0]
    return d


def _device_setter(self: FakeTensor, value: torch.device) -> None:
    raise NotImplementedError


def _is_cuda(self: FakeTensor) -> bool:
    return self._fake_device.type == INTERNAL_TYPE


def _repr(self: FakeTensor, *, tensor_contents: object = None) -> str:
    grad = f", grad_fn=<{type(self.grad_fn).__name__}>" if self.grad_fn is not None else ""
    return (
        f"tensor(<emulated: no data>, size={tuple(self.shape)}, dtype={self.dtype}, "
        f"device='{self.device}'{grad})"
    )


_tensor_device = torch._C.TensorBase.device.__get__


def _subclass_device(self: torch.Tensor) -> torch.device:
    d = _tensor_device(self)
    if d.type == INTERNAL_TYPE and _view.internal_depth == 0:
        return _user_device[0]
    return d


def patch_fake_tensor(patcher: Patcher) -> None:
    """Make FakeTensor answer `device`, `is_cuda` and `repr` the way a CUDA tensor would.

    Wrapper subclasses over fake tensors (DTensor) take their C++ device from the fake tensor
    inside; they report `cuda:N` to Python code the same way.
    """
    from torch.distributed.tensor import DTensor

    patcher.set(DTensor, "device", property(_subclass_device))
    patcher.set(FakeTensor, "device", property(_device, _device_setter))
    patcher.set(FakeTensor, "is_cuda", property(_is_cuda))
    patcher.set(FakeTensor, "__repr__", _repr)
