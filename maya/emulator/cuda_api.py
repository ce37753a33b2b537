"""The emulated `torch.cuda` (and `torch.accelerator`) API: answers as the target GPU would.

`install_cuda_api(patcher)` replaces the module attributes for the length of an emulation.
Calls Maya cannot emulate (jiterator, raw allocator access, private memory pools, IPC) raise
`UnsupportedCudaCall`, naming the call.
"""

from __future__ import annotations

import collections
import contextlib
import warnings
from dataclasses import dataclass

import torch

from maya.emulator import allocator_config, fake_mode
from maya.emulator import state as st
from maya.emulator.events import EventKind
from maya.emulator.generators import CUDA_RNG_FUNCTIONS
from maya.emulator.patcher import Patcher
from maya.emulator.streams import EmulatedEvent, EmulatedStream, StreamContext

CUDA_VERSION = "13.0"
"""What `torch.version.cuda` answers on a CPU build of torch under emulation."""
CUDNN_VERSION = 91900
"""What `torch.backends.cudnn.version()` answers under emulation (cuDNN 9.19, as on the H200)."""
NCCL_VERSION = (2, 28, 9)
"""`torch.cuda.nccl.version()`: the NCCL of the H200 measurements (benchmarks/gpu/multi_gpu_h200x2/
nccl_h200x2_dense.json). A CPU build of torch has none, and torch.distributed's logging asks for it
when the process group uses NCCL (torch.distributed.checkpoint's save failed there)."""

UNSUPPORTED = (
    "caching_allocator_alloc",
    "caching_allocator_delete", "cudart", "ipc_collect", "get_stream_from_external", "ExternalStream",
    "MemPool", "use_mem_pool",
)
"""torch.cuda names that fail under emulation with UnsupportedCudaCall."""


class UnsupportedCudaCall(RuntimeError):
    """A torch.cuda call that Maya cannot emulate."""


@dataclass(frozen=True, slots=True)
class EmulatedDeviceProperties:
    """What `torch.cuda.get_device_properties()` returns under emulation."""

    name: str
    major: int
    minor: int
    total_memory: int
    multi_processor_count: int
    L2_cache_size: int
    is_integrated: bool = False
    is_multi_gpu_board: bool = False
    warp_size: int = 32
    max_threads_per_multi_processor: int = 2048
    regs_per_multiprocessor: int = 65536
    gcnArchName: str = "NVIDIA"
    uuid: str = "00000000-0000-0000-0000-000000000000"


def _device_index(device: object = None) -> int:
    s = st.active()
    if device is None:
        return fake_mode.user_device().index
    if isinstance(device, int):
        index = device
    elif isinstance(device, str):
        index = torch.device(device).index
    elif isinstance(device, torch.device):
        index = device.index
    elif isinstance(device, EmulatedStream):
        index = device.device_index
    else:
        raise TypeError(f"torch.cuda: cannot interpret {device!r} as a CUDA device (emulated)")
    index = fake_mode.user_device().index if index is None else index
    if not 0 <= index < s.config.local_world_size:
        raise RuntimeError(
            f"CUDA error: invalid device ordinal {index} (emulated node has {s.config.local_world_size} GPUs)"
        )
    return index


def _set_device(device: object) -> None:
    fake_mode.set_user_device_index(_device_index(device))


def _exchange_device(device: int) -> int:
    previous = fake_mode.user_device().index
    if device >= 0:
        _set_device(device)
    return previous


def _properties(device: object = None) -> EmulatedDeviceProperties:
    _device_index(device)
    gpu = st.active().config.gpu
    return EmulatedDeviceProperties(
        name=gpu.name,
        major=gpu.compute_capability[0],
        minor=gpu.compute_capability[1],
        total_memory=gpu.total_memory_bytes,
        multi_processor_count=gpu.multiprocessor_count,
        L2_cache_size=gpu.l2_cache_bytes,
    )


def _synchronize(device: object = None) -> None:
    st.active().add_row(EventKind.SYNC, "cuda:synchronize", stream=-1)


def _stream_by_id(stream_id: int) -> EmulatedStream:
    streams = st.active().streams
    stream = streams.get(stream_id)
    if stream is None:
        stream = streams[stream_id] = EmulatedStream(stream_id=stream_id)
    return stream


def _current_stream(device: object = None) -> EmulatedStream:
    return _stream_by_id(st.active().current_stream)


def _default_stream(device: object = None) -> EmulatedStream:
    return _stream_by_id(0)


def _set_stream(stream: EmulatedStream | None) -> None:
    if stream is not None:
        st.active().current_stream = stream.stream_id


def _memory_stats_as_nested_dict(device: object = None) -> dict:
    return st.active().allocator.memory_stats()


def _memory_stats(device: object = None) -> collections.OrderedDict:
    """`torch.cuda.memory_stats()`: every figure PyTorch's caching allocator reports, by name, sorted."""
    return collections.OrderedDict(st.active().allocator.flat_memory_stats())


def _mem_get_info(device: object = None) -> tuple[int, int]:
    s = st.active()
    total = s.config.gpu.total_memory_bytes
    return total - st.CUDA_CONTEXT_BYTES - s.allocator.stats.reserved_bytes, total


def _memory_summary(device: object = None, abbreviated: bool = False) -> str:
    s = st.active().allocator.stats
    mib = 1 << 20
    return (
        "Maya emulated CUDA memory summary\n"
        f"  allocated: {s.allocated_bytes / mib:.1f} MiB (peak {s.peak_allocated_bytes / mib:.1f} MiB)\n"
        f"  reserved:  {s.reserved_bytes / mib:.1f} MiB (peak {s.peak_reserved_bytes / mib:.1f} MiB)\n"
        f"  segments: {s.segments}, alloc retries: {s.num_alloc_retries}, OOMs: {s.num_ooms}\n"
    )


def _set_memory_fraction(fraction: float, device: object = None) -> None:
    if not 0 <= fraction <= 1:
        raise ValueError(f"set_per_process_memory_fraction: fraction={fraction} must be in [0, 1]")
    st.active().allocator.set_memory_fraction(fraction)


def _set_allocator_settings(settings: str) -> None:
    """`torch.cuda.memory._set_allocator_settings`: the emulated allocator follows them from now on."""
    s = st.active()
    s.allocator.settle_config()
    s.allocator.configure(allocator_config.parse(settings, s.allocator.config)[0])
    s.allocator_settings.append(settings)


def _no_memory_history(name: str, result=None):
    """`torch.cuda.memory`'s allocation history and snapshots read the CUDA caching allocator's
    own records, which a CPU process lacks (the calls failed: "torch._C has no attribute
    '_cuda_record_memory_history'"). They do nothing here, with a warning: Maya's own memory
    figures are the trace's per-op `allocated_bytes` and the summary's peaks."""

    def call(*args, **kwargs):
        warnings.warn(f"torch.cuda.memory.{name} does nothing under Maya emulation: the trace records "
                      "allocated and reserved bytes after every op instead", stacklevel=2)
        return result() if callable(result) else result

    return call


def _unsupported(name: str) -> type:
    """A stand-in that raises when called or instantiated, yet still works in type annotations."""

    def fail(cls, *args: object, **kwargs: object):
        raise UnsupportedCudaCall(
            f"torch.cuda.{name} cannot be emulated by Maya (no private memory pools, raw "
            "allocator access or IPC on the emulated GPU); run this part of the script only when torch.cuda is real"
        )

    return type(name, (), {"__new__": fail, "__doc__": f"torch.cuda.{name} (not emulated)"})


def _stream_tensor(self: torch.Tensor, stream: EmulatedStream) -> None:
    """Tensor.record_stream: the block may only be reused once `stream` is done (not modelled)."""


@contextlib.contextmanager
def _nvtx_range(msg: str, *args: object, **kwargs: object):
    yield


def install_cuda_api(patcher: Patcher) -> None:
    """Patch torch.cuda, torch.cuda.memory, torch.accelerator and torch.backends for emulation."""
    cuda = torch.cuda
    s = st.active()
    index = lambda device=None: _device_index(device)  # noqa: E731
    simple = {
        "is_available": lambda: True,
        "is_initialized": lambda: True,
        "init": lambda: None,
        "_lazy_init": lambda: None,
        "device_count": lambda: s.config.local_world_size,
        "current_device": lambda: fake_mode.user_device().index,
        "set_device": _set_device,
        "_exchange_device": _exchange_device,
        "_maybe_exchange_device": _exchange_device,
        "get_device_properties": _properties,
        "get_device_name": lambda device=None: _properties(device).name,
        "get_device_capability": lambda device=None: (_properties(device).major, _properties(device).minor),
        "get_arch_list": lambda: ["sm_80", "sm_90", "sm_100"],
        "can_device_access_peer": lambda device, peer: True,
        "is_bf16_supported": lambda including_emulation=True: s.config.gpu.supports_bf16,
        "is_tf32_supported": lambda: s.config.gpu.compute_capability >= (8, 0),
        "synchronize": _synchronize,
        "Stream": EmulatedStream,
        "Event": EmulatedEvent,
        "current_stream": _current_stream,
        "default_stream": _default_stream,
        "set_stream": _set_stream,
        "stream": StreamContext,
        "StreamContext": StreamContext,
        **CUDA_RNG_FUNCTIONS,
        "memory_allocated": lambda device=None: (index(device), s.allocator.stats.allocated_bytes)[1],
        "max_memory_allocated": lambda device=None: (index(device), s.allocator.stats.peak_allocated_bytes)[1],
        "memory_reserved": lambda device=None: (index(device), s.allocator.stats.reserved_bytes)[1],
        "max_memory_reserved": lambda device=None: (index(device), s.allocator.stats.peak_reserved_bytes)[1],
        "memory_cached": lambda device=None: s.allocator.stats.reserved_bytes,
        "max_memory_cached": lambda device=None: s.allocator.stats.peak_reserved_bytes,
        "reset_peak_memory_stats": lambda device=None: s.allocator.reset_peak(),
        "reset_max_memory_allocated": lambda device=None: s.allocator.reset_peak(),
        "reset_max_memory_cached": lambda device=None: s.allocator.reset_peak(),
        "reset_accumulated_memory_stats": lambda device=None: s.allocator.reset_accumulated(),
        "memory_stats": _memory_stats,
        "memory_stats_as_nested_dict": _memory_stats_as_nested_dict,
        "mem_get_info": _mem_get_info,
        "memory_summary": _memory_summary,
        "empty_cache": lambda: s.allocator.empty_cache(),
        "set_per_process_memory_fraction": _set_memory_fraction,
        "list_gpu_processes": lambda device=None: "GPU:0\nno processes are running (emulated)",
        "utilization": lambda device=None: 0,
    }
    for name, value in simple.items():
        patcher.set(cuda, name, value)
        if hasattr(cuda.memory, name):
            patcher.set(cuda.memory, name, value)
        if hasattr(cuda.random, name):
            patcher.set(cuda.random, name, value)
    patcher.set(cuda.streams, "Stream", EmulatedStream)
    patcher.set(cuda.streams, "Event", EmulatedEvent)
    for name in UNSUPPORTED:
        patcher.set(cuda, name, _unsupported(name))
        if hasattr(cuda.memory, name):  # MemPool and use_mem_pool live there too
            patcher.set(cuda.memory, name, getattr(cuda, name))
    for name in ("range_push", "range_pop", "mark"):
        patcher.set(cuda.nvtx, name, lambda *a, **k: 0)
    patcher.set(cuda.nvtx, "range", _nvtx_range)
    patcher.set(torch.Tensor, "record_stream", _stream_tensor)
    if torch.version.cuda is None:
        patcher.set(torch.version, "cuda", CUDA_VERSION)
    patcher.set(torch.backends.cudnn, "is_available", lambda: True)
    patcher.set(torch.backends.cudnn, "version", lambda: CUDNN_VERSION)
    patcher.set(torch.backends.cuda, "is_built", lambda: True)
    patcher.set(torch.cuda.nccl, "version", lambda: NCCL_VERSION)
    for name, result in (("_record_memory_history", None), ("_dump_snapshot", None), ("_snapshot", dict),
                         ("memory_snapshot", list)):
        patcher.set(torch.cuda.memory, name, _no_memory_history(name, result))
    patcher.set(torch.cuda, "memory_snapshot", torch.cuda.memory.memory_snapshot)
    patcher.set(torch.cuda.memory, "_set_allocator_settings", _set_allocator_settings)
    _install_accelerator(patcher, simple)
    for name, emulated in (("Stream", EmulatedStream), ("Event", EmulatedEvent)):
        if hasattr(torch, name):
            patcher.set(torch, name, _device_generic(getattr(torch, name), emulated))


def _device_generic(original: type, emulated: type) -> type:
    """A stand-in for `torch.Stream` or `torch.Event`, the device-generic classes (PyTorch 2.5; device-
    agnostic code builds its streams and events with them): one on a CUDA device, or on no device (the
    current accelerator, which under emulation is CUDA), is the emulated `torch.cuda` one; any other
    device gets PyTorch's own. Instances of either pass `isinstance` against it."""

    class DeviceGeneric(type):
        def __instancecheck__(cls, obj: object) -> bool:
            return isinstance(obj, (original, emulated))

        def __subclasscheck__(cls, sub: type) -> bool:
            return issubclass(sub, (original, emulated))

        def __call__(cls, device: object = None, *args: object, **kwargs: object) -> object:
            if device is None or torch.device(device).type == "cuda":
                return emulated(*args, **kwargs) if emulated is EmulatedEvent else emulated(device, *args, **kwargs)
            return original(device, *args, **kwargs)

    return DeviceGeneric(original.__name__, (), {"__module__": "torch", "__doc__": original.__doc__})


def _install_accelerator(patcher: Patcher, cuda_api: dict) -> None:
    acc = torch.accelerator
    replacements = {
        "is_available": lambda: True,
        "current_accelerator": lambda check_available=False: torch.device("cuda"),
        "device_count": cuda_api["device_count"],
        "current_device_index": cuda_api["current_device"],
        "current_device_idx": cuda_api["current_device"],
        "set_device_index": cuda_api["set_device"],
        "set_device_idx": cuda_api["set_device"],
        "current_stream": _current_stream,
        "set_stream": _set_stream,
        "synchronize": _synchronize,
        "empty_cache": cuda_api["empty_cache"],
        "memory_allocated": cuda_api["memory_allocated"],
        "max_memory_allocated": cuda_api["max_memory_allocated"],
        "memory_reserved": cuda_api["memory_reserved"],
        "max_memory_reserved": cuda_api["max_memory_reserved"],
        "reset_peak_memory_stats": cuda_api["reset_peak_memory_stats"],
        "memory_stats": _memory_stats,
    }
    for name, value in replacements.items():
        if hasattr(acc, name):
            patcher.set(acc, name, value)
    # FSDP2's default mesh asks the C++ side directly, which would answer the proxy device.
    patcher.set(torch._C, "_get_accelerator", lambda check_available=False: torch.device("cuda"))
