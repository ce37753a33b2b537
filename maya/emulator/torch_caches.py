"""Keep emulations that share a worker process apart: mesh identity, and PyTorch's distributed caches.

Rank emulations run one after another in reused worker processes (maya.world.rank_emulation).
DTensor caches sharding propagation (in Python and in its C++ dispatch fast path, one cache per
thread) and redistribution plans, keyed by `DeviceMesh`. Two meshes of different emulations compare
equal when their rank maps and dimension names do, so a warm process would replay an earlier
world's plans, which name that world's process groups ("Could not resolve the process group
registered under the name 5").

- `install_mesh_identity` gives every mesh created during an emulation that emulation's own
  `_thread_id`, the field PyTorch's equality already compares to keep the meshes of its threaded
  test backend's ranks apart, so no cache entry of one emulation matches a mesh of another.
- `clear_distributed_caches`, at the end of an emulation, frees what the caches hold (the C++
  cache of the autograd worker thread cannot be reached from here; its stale entries never match).
- `reset_library_singletons`, at the end of an emulation, empties the process-wide state that
  libraries keep of the distributed run they set up. Hugging Face accelerate's `PartialState`,
  `AcceleratorState` and `GradientState` (which `Accelerator` and transformers' `Trainer` use) share
  one dict per class: left filled, the next emulation in the process found its process group
  "initialized" and never created one, and DDP then failed for want of a default group. Libraries
  that keep their distributed run in module globals (`LIBRARY_GLOBALS`: DeepSpeed's backend and
  process groups) get those globals back as they were at import (`remember_library_globals` keeps
  them): left set, the next emulation used the previous world's groups ("Group ... is not registered").
- `remember_global_flags`, at the start of an emulation, keeps PyTorch's process-wide numerics
  switches (`GLOBAL_FLAGS`, TF32 by both of its APIs, the default dtype, grad mode, deterministic
  algorithms) and puts back at its end those the script changed. The recorder reads them: a script that
  set `cudnn.benchmark` made every later emulation in the process record autotuned convolutions.
"""

from __future__ import annotations

import functools
import itertools
import sys
from typing import Any

import torch

from maya.emulator.patcher import Patcher

_PREFIX = "torch.distributed"
_EMULATIONS = itertools.count(1)


def install_mesh_identity(patcher: Patcher) -> None:
    """Mark every DeviceMesh built while `patcher`'s patches last with a per-emulation identity."""
    if not torch.distributed.is_available():
        return
    from torch.distributed.device_mesh import DeviceMesh

    identity = -next(_EMULATIONS)  # negative: never a real thread id
    original = DeviceMesh.__init__

    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        if self._thread_id is None:
            self._thread_id = identity
            self._hash = None  # recomputed with the identity on next use

    patcher.set(DeviceMesh, "__init__", __init__)


def clear_distributed_caches() -> None:
    """Clear every `functools` cache of the loaded `torch.distributed` modules (and of their classes),
    their module-level dicts named `*_cache` (DTensor's redistribute planners), and DTensor's
    sharding-propagation caches of this thread. Imports nothing that is not loaded."""
    for name, module in list(sys.modules.items()):
        if module is None or not (name == _PREFIX or name.startswith(_PREFIX + ".")):
            continue
        for key, value in list(vars(module).items()):
            if key.endswith("_cache") and type(value) is dict:
                value.clear()
                continue
            _clear(value)
            if issubclass(type(value), type) and value.__module__ == name:
                for member in list(vars(value).values()):
                    _clear(member)
    api = sys.modules.get("torch.distributed.tensor._api")
    if api is not None:
        from torch.distributed.tensor._sharding_prop import LocalLRUCache

        propagator = api.DTensor._op_dispatcher.sharding_propagator
        # A thread-local cache: replacing it drops every thread's copy.
        propagator.propagate_op_sharding = LocalLRUCache(propagator.propagate_op_sharding_non_cached)
        clear_native = getattr(torch._C, "_clear_DTensor_sharding_propagator_cache", None)
        if clear_native is not None:
            clear_native()


def _clear(value: Any) -> None:
    # type(), not isinstance(): a deprecated module attribute (torch.distributed.reduce_op) warns on
    # every attribute access, __class__ included.
    function = value.__func__ if type(value) in (staticmethod, classmethod) else value
    if type(function) is functools._lru_cache_wrapper:  # what lru_cache and cache return
        function.cache_clear()


LIBRARY_SINGLETONS = {"accelerate.state": ("PartialState", "AcceleratorState", "GradientState")}
"""Loaded module -> classes whose instances share one `_shared_state` dict (the Borg pattern)."""


LIBRARY_GLOBALS = ("deepspeed.comm.comm", "deepspeed.utils.groups")
"""Modules whose globals hold the distributed run a library set up (DeepSpeed's backend, its groups)."""

_AT_IMPORT: dict[str, dict[str, object]] = {}
"""`LIBRARY_GLOBALS` module -> its simple globals as first seen (right after import), for the process:
values (None, numbers, strings) as they were, and the type of each container that was empty."""

_SIMPLE = (type(None), bool, int, float, str)


def remember_library_globals(patcher: Patcher) -> None:
    """Keep the simple globals of each `LIBRARY_GLOBALS` module as they are at its import (now for one
    imported already, unless kept before)."""
    for name in LIBRARY_GLOBALS:
        patcher.after_import(name, _remember)


def _remember(module: Any) -> None:
    if module.__name__ not in _AT_IMPORT:
        _AT_IMPORT[module.__name__] = {
            name: (value if isinstance(value, _SIMPLE) else type(value))
            for name, value in vars(module).items()
            if not name.startswith("__") and (isinstance(value, _SIMPLE) or (type(value) in (dict, list, set) and not value))
        }


def reset_library_singletons() -> None:
    """Empty the shared state of `LIBRARY_SINGLETONS` whose modules are loaded (what their own
    `_reset_state` does), and put the kept globals of loaded `LIBRARY_GLOBALS` modules back (values as
    they were, containers emptied); imports nothing."""
    for module_name, classes in LIBRARY_SINGLETONS.items():
        module = sys.modules.get(module_name)
        for name in classes if module is not None else ():
            shared = getattr(getattr(module, name, None), "_shared_state", None)
            if shared is not None:
                shared.clear()
    for module_name, kept in _AT_IMPORT.items():
        module = sys.modules.get(module_name)
        for name, value in kept.items() if module is not None else ():
            current = getattr(module, name, None)
            if not isinstance(value, type):
                setattr(module, name, value)
            elif type(current) is value:
                current.clear()
            else:
                setattr(module, name, value())


GLOBAL_FLAGS = (
    ("torch.backends.cudnn", "benchmark"), ("torch.backends.cudnn", "deterministic"),
    ("torch.backends.cudnn", "enabled"), ("torch.backends.cudnn", "benchmark_limit"),
    ("torch.backends.cuda.matmul", "allow_fp16_reduced_precision_reduction"),
    ("torch.backends.cuda.matmul", "allow_bf16_reduced_precision_reduction"),
)
"""(module, attribute) switches a script sets by assignment that `remember_global_flags` puts back."""

SDP_BACKENDS = ("flash", "mem_efficient", "math", "cudnn")
"""`torch.backends.cuda.<name>_sdp_enabled()` / `enable_<name>_sdp(flag)` pairs that are put back."""

TF32_PRECISIONS = ("torch.backends", "torch.backends.cuda.matmul", "torch.backends.cudnn", "torch.backends.cudnn.conv",
                   "torch.backends.cudnn.rnn")
"""Holders of PyTorch's newer TF32 switch, `fp32_precision` (the generic one first: setting it sets
the others)."""


def remember_global_flags(patcher: Patcher) -> None:
    """Keep PyTorch's process-wide numerics switches as they are now; `patcher.restore()` puts back
    those the emulated script changed.

    TF32 has two APIs that PyTorch refuses to read once they disagree: the older one
    (`torch.set_float32_matmul_precision`, `cudnn.allow_tf32`, whose setters also set the newer one)
    is put back first when it changed or can no longer be read, then each `fp32_precision` that differs."""
    flags = {(m, a): getattr(_module(m), a) for m, a in GLOBAL_FLAGS if hasattr(_module(m), a)}
    sdp = {name: getattr(torch.backends.cuda, f"{name}_sdp_enabled")() for name in SDP_BACKENDS
           if hasattr(torch.backends.cuda, f"{name}_sdp_enabled")}
    legacy = _legacy_tf32()
    precisions = _tf32_precisions()
    default_dtype, grad = torch.get_default_dtype(), torch.is_grad_enabled()
    deterministic = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())

    def restore() -> None:
        for (m, a), value in flags.items():
            if getattr(_module(m), a) != value:
                setattr(_module(m), a, value)
        for name, enabled in sdp.items():
            if getattr(torch.backends.cuda, f"{name}_sdp_enabled")() != enabled:
                getattr(torch.backends.cuda, f"enable_{name}_sdp")(enabled)
        if legacy is not None and _legacy_tf32() != legacy:
            torch.set_float32_matmul_precision(legacy[0])
            torch.backends.cudnn.allow_tf32 = legacy[1]
        for holder, value in precisions.items():
            if getattr(_module(holder), "fp32_precision") != value:
                _module(holder).fp32_precision = value
        if torch.get_default_dtype() != default_dtype:
            torch.set_default_dtype(default_dtype)
        torch.set_grad_enabled(grad)
        if (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()) != deterministic:
            torch.use_deterministic_algorithms(deterministic[0], warn_only=deterministic[1])

    patcher.add_cleanup(restore)


def _module(dotted: str) -> Any:
    obj = torch
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def _legacy_tf32() -> tuple[str, bool] | None:
    """(float32 matmul precision, cudnn.allow_tf32), or None where the two TF32 APIs disagree."""
    try:
        return torch.get_float32_matmul_precision(), bool(torch.backends.cudnn.allow_tf32)
    except RuntimeError:
        return None


def _tf32_precisions() -> dict[str, str]:
    return {h: _module(h).fp32_precision for h in TF32_PRECISIONS if hasattr(_module(h), "fp32_precision")}
