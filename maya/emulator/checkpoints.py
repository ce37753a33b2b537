"""`torch.save` and `torch.load` under emulation: checkpoints of shapes.

Emulated tensors have no data, and pickling one failed ("Can't pickle local object
'WeakValueDictionary...'"), so a script that saves a checkpoint, as most training scripts do every
so many steps or at the end, failed there. Under emulation a fake tensor pickles as a meta tensor
(dtype, shape, strides, requires_grad: what PyTorch writes for a meta tensor, which `torch.load`
reads back with `weights_only=True` too), so the file is small and loads; a small host value the
fake mode tracks for real (an optimizer's step count) is written with its value. `torch.load` turns the
meta tensors it reads back into emulated tensors on the GPU (`map_location` "cuda", or none: a
training checkpoint comes from the GPU) or the host (`map_location="cpu"`), allocated as the real
load would be; the file's real tensors are read on the host and go where PyTorch would put them (all
to the GPU for "cuda"; with no map_location, those saved from a GPU), and `load_state_dict` copies
them as on a GPU. The copies to the host and the disk writes of a real save are not timed.
torch.distributed.checkpoint's save and load are skipped with a warning (`install_checkpoints` says
why).
"""

from __future__ import annotations

import collections
import concurrent.futures
import warnings

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch.utils._python_dispatch import _disable_current_modes

from maya.emulator.backend import is_cuda_like
from maya.emulator.patcher import Patcher


def _reduce_as_meta(self: FakeTensor, protocol: int):
    constant = getattr(self, "constant", None)
    if constant is not None:  # a small host value the fake mode tracks for real (Adam's step): kept
        return constant.__reduce_ex__(protocol)
    return torch._utils._rebuild_meta_tensor_no_storage, (self.dtype, tuple(self.shape), self.stride(),
                                                           self.requires_grad)


def _load_device(map_location) -> str | None:
    """Where the loaded tensors go: "cuda" (the emulated GPU), "cpu", or None where `map_location`
    is a mapping or a function, which Maya leaves to meta tensors' own rules."""
    if map_location is None or is_cuda_like(map_location):
        return "cuda"
    if str(map_location) == "cpu":
        return "cpu"
    return None


def _materialise(obj, device: str, to_gpu, seen: dict):
    """`obj` with every meta tensor inside dicts, lists and tuples made an emulated tensor on `device`,
    and every real tensor for which `to_gpu(tensor)` holds moved to the emulated GPU."""
    if id(obj) in seen:
        return seen[id(obj)]
    if isinstance(obj, torch.Tensor) and (obj.device.type == "meta" or to_gpu(obj)):
        if obj.device.type == "meta":
            new = torch.empty_strided(obj.shape, obj.stride(), dtype=obj.dtype, device=device)
        else:
            new = obj.detach().to("cuda")
        if isinstance(obj, torch.nn.Parameter):
            new = torch.nn.Parameter(new, requires_grad=obj.requires_grad)
        seen[id(obj)] = new  # tensors saved twice (tied weights) stay one
        return new
    if isinstance(obj, dict):
        out = type(obj)() if isinstance(obj, collections.OrderedDict) or type(obj) is dict else dict()
        for key, value in obj.items():
            out[key] = _materialise(value, device, to_gpu, seen)
        if hasattr(obj, "_metadata"):  # a state dict's version metadata
            out._metadata = obj._metadata
        return out
    if isinstance(obj, list):
        return [_materialise(v, device, to_gpu, seen) for v in obj]
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return tuple(_materialise(v, device, to_gpu, seen) for v in obj)
    return obj


def _distributed_checkpoint_skipped(name: str):
    def skipped(*args, **kwargs):
        warnings.warn(f"torch.distributed.checkpoint.{name} is not emulated: nothing is written or read, and "
                      "its time is not predicted", stacklevel=2)
        if name == "async_save":
            done = concurrent.futures.Future()
            done.set_result(None)
            return done
        return None

    return skipped


def install_checkpoints(patcher: Patcher) -> None:
    """Make emulated tensors save as meta tensors and load back as emulated ones (module docstring), and
    skip torch.distributed.checkpoint's save and load with a warning: its plans are gathered from
    every rank, and under emulation the ranks a class stands for send no plans of their own, so its
    check of the global plan failed ("invalid fill tensor-volume")."""
    patcher.set(FakeTensor, "__reduce_ex__", _reduce_as_meta)
    original_load = torch.load

    def load(f, map_location=None, *args, **kwargs):
        device = _load_device(map_location)
        if device is None:
            return original_load(f, map_location, *args, **kwargs)
        # Read on the host, outside the emulation's modes: the file's real tensors (an optimizer's step
        # count) keep their values instead of turning fake on the way in. Where they go then is what
        # PyTorch would do: all to the GPU for map_location "cuda"; with none, each where it was saved
        # (a real checkpoint written on a GPU names its storages' CUDA devices).
        from_gpu: set[int] = set()

        def on_host(storage, location):
            if location.startswith("cuda"):
                from_gpu.add(storage.data_ptr())
            return storage

        with _disable_current_modes():
            obj = original_load(f, on_host, *args, **kwargs)
        if device == "cpu":
            return _materialise(obj, device, lambda t: False, {})
        explicit = map_location is not None
        return _materialise(obj, device, lambda t: explicit or t.untyped_storage().data_ptr() in from_gpu, {})

    patcher.set(torch, "load", load)
    try:
        import torch.distributed.checkpoint as dcp
    except ImportError:  # a torch without distributed
        return
    for name in ("save", "async_save", "load"):
        if hasattr(dcp, name):
            patcher.set(dcp, name, _distributed_checkpoint_skipped(name))
