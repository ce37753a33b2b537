"""The proxy device that stands in for CUDA under emulation.

PyTorch's C++ autograd engine asks the *accelerator* (CUDA, or a registered PrivateUse1 backend)
for streams whenever a tensor that needs a gradient lives on it. On a CPU-only build there is no
CUDA accelerator, and on a CUDA build without a GPU its hooks report no devices, so backward on a
tensor whose C++ device is `cuda` aborts or raises in both cases. Maya therefore keeps emulated CUDA
tensors on PyTorch's PrivateUse1 device, renamed `maya`, registered from Python with a no-op device
guard (`torch.utils.backend_registration._setup_privateuseone_for_python_backend`). Python code
sees `cuda:N`: the emulator patches `FakeTensor.device` and `is_cuda` (see `fake_mode.py`), and
translates every `cuda` device argument to `maya:0` on the way in.

Every emulated process has one GPU, so all `cuda:i` map to `maya:0`; `device_index` is what
Python sees as the index (torchrun's LOCAL_RANK, or the last `torch.cuda.set_device`).
"""

from __future__ import annotations

import threading

import torch

INTERNAL_TYPE = "maya"
"""Name PrivateUse1 is renamed to; the C++ device type of every emulated CUDA tensor."""

_install_lock = threading.Lock()
_installed = False


class _AlwaysAvailableHooks(torch._C._acc.PrivateUse1Hooks):
    """PrivateUse1 hooks that report the proxy device as present and initialised."""

    def is_available(self) -> bool:
        return True

    def has_primary_context(self, device_index: int) -> bool:
        return True

    def is_built(self) -> bool:
        return True


def install_backend() -> None:
    """Register the `maya` PrivateUse1 backend once per process (it cannot be unregistered).

    Call it before the process runs any autograd backward pass: PyTorch's autograd engine counts
    devices once, at its first backward, and a device registered later has no worker queue.
    """
    global _installed
    with _install_lock:
        if _installed:
            return
        from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

        current = torch._C._get_privateuse1_backend_name()
        if current not in ("privateuseone", INTERNAL_TYPE):
            raise RuntimeError(
                f"another PyTorch backend ({current!r}) already uses PrivateUse1; "
                "Maya needs it for its emulated CUDA device"
            )
        if current == "privateuseone":
            _setup_privateuseone_for_python_backend(rename=INTERNAL_TYPE, hook=_AlwaysAvailableHooks())
        # Renaming makes PrivateUse1 the process's accelerator, which torch.utils.checkpoint would
        # otherwise take as its default device type for CPU-only inputs; keep PyTorch's "cuda".
        from torch.utils.checkpoint import DefaultDeviceType

        if DefaultDeviceType._default_device_type is None:
            DefaultDeviceType.set_device_type("cuda")
        _register_backend_kernels()
        _installed = True


_libraries: list = []


def _register_backend_kernels() -> None:
    """Give the proxy device a kernel wherever CPU and CUDA have one but other backends decompose.

    An op with both a backend kernel and a CompositeImplicitAutograd kernel (e.g. `silu_backward`)
    runs as one kernel on CUDA, but is decomposed for a backend that has no kernel of its own. A
    PrivateUse1 kernel makes dispatch on the proxy device follow CUDA's; the fake mode intercepts
    the op before any backend kernel would run, so these kernels never execute.
    """
    lib = torch.library.Library("aten", "IMPL")
    for name in torch._C._dispatch_get_all_op_names():
        if (
            name.startswith("aten::")
            and torch._C._dispatch_has_kernel_for_dispatch_key(name, "CPU")
            and torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeImplicitAutograd")
            and not torch._C._dispatch_has_kernel_for_dispatch_key(name, "PrivateUse1")
        ):
            lib.impl(name.removeprefix("aten::"), _never_runs, "PrivateUse1")
    _libraries.append(lib)


def _never_runs(*args: object, **kwargs: object) -> None:
    raise RuntimeError("Maya's proxy-device kernel ran: the fake mode should have intercepted this op")


INTERNAL_DEVICE = torch.device("privateuseone", 0)
"""The one C++ device every emulated CUDA tensor lives on."""


def is_cuda_like(device: object) -> bool:
    """True for anything that names a CUDA device: "cuda", "cuda:1", torch.device("cuda"), an int."""
    if isinstance(device, torch.device):
        return device.type == "cuda"
    if isinstance(device, str):
        return device == "cuda" or device.startswith("cuda:")
    return False


def to_internal(device: object) -> object:
    """Map a CUDA device argument to the proxy device; leave every other value unchanged."""
    return INTERNAL_DEVICE if is_cuda_like(device) else device
