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
