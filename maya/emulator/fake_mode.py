"""`EmulatorFakeMode`: PyTorch's FakeTensorMode, adapted so that fake CUDA tensors can train.

Inside the fake mode's own dispatch, tensors report their real C++ device (`maya:0`), which keeps
FakeTensorMode's device propagation consistent. Everywhere else (user code, torch.nn, optimizers,
torch.utils.checkpoint, DDP) they report `cuda:N`. A depth counter tells the two apart.
"""

from __future__ import annotations

import inspect
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


def _ctc_loss_backward_kernel(grad, log_probs, *args, **kwargs):
    """`aten::_ctc_loss_backward` (either overload): the gradient of `log_probs`, contiguous, as the
    CUDA kernel allocates it. PyTorch has no meta kernel for it, so fake tensors tried the device's
    real kernel, which the emulated device lacks."""
    return torch.empty(log_probs.shape, dtype=log_probs.dtype, device=log_probs.device)


FAKE_KERNELS = {
    **FUSED_RNN_KERNELS,
    torch.ops.aten._ctc_loss_backward.default: _ctc_loss_backward_kernel,
    torch.ops.aten._ctc_loss_backward.Tensor: _ctc_loss_backward_kernel,
}
"""Ops EmulatorFakeMode computes the outputs of itself, instead of PyTorch's meta kernels."""


class EmulatorFakeMode(FakeTensorMode):
    """FakeTensorMode that never materialises device tensors and reports proxy devices internally."""

    @property
    def avoid_device_init(self) -> bool:
        # Never constant-fold through a real device copy: the proxy device has no kernels.
        return True

    def create_symbolic_nested_int(self, *, nt_tensor_id: int | None = None):
        # A jagged nested tensor's ragged size is a symbolic "nested int", which needs the shape
        # environment of a compiler trace; eager fake tensors have none (PyTorch's own message was
        # "self.shape_env must not be None").
        from maya.emulator.cuda_api import UnsupportedCudaCall

        raise UnsupportedCudaCall(
            "torch.nested jagged tensors (layout=torch.jagged, torch.nested.nested_tensor_from_jagged) cannot be "
            "emulated by Maya: their ragged size is symbolic; pad the batch, or pack it into one sequence with "
            "offsets, for the emulation"
        )

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if _is_inplace_foreach(func) and self._only_our_plain_fakes(args, kwargs):
            return None  # see _is_inplace_foreach
        _view.internal_depth += 1
        try:
            kernel = FAKE_KERNELS.get(func)
            if kernel is not None:
                with self:
                    return kernel(*args, **(kwargs or {}))
            return super().__torch_dispatch__(func, types, args, kwargs)
        finally:
            _view.internal_depth -= 1

    def _only_our_plain_fakes(self, args, kwargs) -> bool:
        """Whether every tensor in `args` and `kwargs` (one list level deep) is a fake tensor of
        this mode without a constant (FakeTensorMode keeps a small CPU tensor's value, and an
        in-place op must update it: Adam's step counters are read back with `.item()`)."""
        for arg in (*args, *(kwargs or {}).values()):
            for t in (arg if isinstance(arg, (list, tuple)) else (arg,)):
                if isinstance(t, torch.Tensor) and not (type(t) is FakeTensor and t.fake_mode is self and t.constant is None):
                    return False
        return True

    def _fast_prep_args_for_hash(self, result: list, args, state, id_hashed_objects: list) -> None:
        """FakeTensorMode's dispatch-cache key of `args`, built faster for the common arguments.

        FakeTensorMode flattens every tensor's `TensorMetadata` field by field, and every int of
        every shape and stride through a chain of isinstance checks: 66 us for the key of one
        `mm` (two tensors), 10 us here (benchmarks/fake_dispatch_speed.py). Here a plain fake tensor (strided,
        no symbolic sizes, no constant) becomes one tuple of the same metadata, minus the fields a
        strided tensor's shape and strides already decide (memory format, contiguity, the sparse
        fields), and ints, floats, strings, dtypes and devices go in as (type, value). Anything
        else goes to FakeTensorMode's own code, so its bypass rules hold. The cache is shared by
        every FakeTensorMode of the process: each key this builds holds `_FAST_KEY`, which no key
        of FakeTensorMode's own contains, so the two kinds never collide.
        """
        if isinstance(args, dict):
            result.extend((_FAST_KEY, dict, len(args)))
            self._fast_prep_args_for_hash(result, tuple(args), state, id_hashed_objects)
            self._fast_prep_args_for_hash(result, tuple(args.values()), state, id_hashed_objects)
            return
        if isinstance(args, (list, tuple)):
            result.extend((_FAST_KEY, type(args), len(args)))
        for arg in args:
            kind = type(arg)
            if kind in _PLAIN_KEY_TYPES:
                result.append(kind)
                result.append(arg)
            elif kind is FakeTensor and arg.layout is torch.strided and not arg._has_symbolic_sizes_strides:
                if arg.fake_mode is not self or arg.constant is not None:
                    super()._prep_args_for_hash(result, (arg,), state, id_hashed_objects)  # raises its bypass
                    continue
                result.append((
                    arg.dtype, tuple(arg.shape), arg.stride(), arg._fake_device, arg.storage_offset(),
                    arg.untyped_storage().nbytes(), arg.requires_grad, arg.is_quantized, arg.is_conj(),
                    arg.is_neg(), arg.is_inference(),
                ))
            elif kind is list or kind is tuple:
                self._fast_prep_args_for_hash(result, arg, state, id_hashed_objects)
            else:
                super()._prep_args_for_hash(result, (arg,), state, id_hashed_objects)

    if list(inspect.signature(FakeTensorMode._prep_args_for_hash).parameters) == [
        "self", "result", "args", "state", "id_hashed_objects",
    ]:  # the torch releases this was written against (2.11 to 2.13); others keep their own
        _prep_args_for_hash = _fast_prep_args_for_hash


_FAST_KEY = object()
"""Marks the dispatch-cache keys `EmulatorFakeMode._fast_prep_args_for_hash` builds."""

_PLAIN_KEY_TYPES = frozenset({int, float, bool, str, type(None), torch.dtype, torch.device, torch.layout, torch.memory_format})
"""Argument types that go into a dispatch-cache key as (type, value)."""

_INPLACE_FOREACH: dict[object, bool] = {}


def _is_inplace_foreach(func) -> bool:
    """Whether `func` is an in-place foreach op (`aten::_foreach_mul_`: mutates its first list,
    returns nothing).

    On fake tensors such an op changes no metadata and allocates nothing, yet FakeTensorMode
    hashes every tensor of every list for its cache and runs the meta kernel per tensor: 1.3 ms
    for one `_foreach_mul_` over 40 tensors, 0.06 ms with this return (benchmarks/
    fake_dispatch_speed.py, which also times a pipeline corner of the Llama-70B study: 14.3 s with
    FakeTensorMode's own paths, 11.2 s with both shortcuts). The recorder (the mode above) has
    recorded the op by then, and autograd has bumped the tensors' versions, so `EmulatorFakeMode`
    returns at once.
    """
    known = _INPLACE_FOREACH.get(func)
    if known is None:
        schema = getattr(func, "_schema", None)
        known = bool(
            schema is not None and schema.name.startswith("aten::_foreach_") and not schema.returns
            and schema.arguments and schema.arguments[0].alias_info is not None and schema.arguments[0].alias_info.is_write
        )
        _INPLACE_FOREACH[func] = known
    return known


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
