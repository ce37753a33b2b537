"""Out of memory in backward: raised where the script called backward, not on the autograd thread.

PyTorch's autograd engine runs a device's backward ops on its own worker thread. An emulated OOM
raised there (seen inside a checkpoint's recomputation) aborted the whole process: the C++ stack
ended in the engine's stream-guard destructor, which is `noexcept` and calls back into the
Python-registered device guard. So an emulated OOM on a worker thread is deferred: the op goes on without its memory (the run is already lost), the engine finishes,
and the `torch.autograd.backward` / `torch.autograd.grad` call that started it raises
`torch.OutOfMemoryError`, where a real CUDA OOM in backward surfaces too.
"""

from __future__ import annotations

import threading

import torch

from maya.emulator import state as st
from maya.emulator.patcher import Patcher


def raise_out_of_memory(state: st.EmulationState, message: str) -> None:
    """Raise `torch.OutOfMemoryError` now on the main thread, or defer it off it (module docstring)."""
    if threading.current_thread() is threading.main_thread():
        raise torch.OutOfMemoryError(message) from None
    if state.deferred_oom is None:
        state.deferred_oom = message


def install_deferred_oom(patcher: Patcher, state: st.EmulationState) -> None:
    """Make backward and autograd.grad raise an OOM deferred on the engine's threads."""
    for name in ("backward", "grad"):
        original = getattr(torch.autograd, name)

        def wrapper(*args, _original=original, **kwargs):
            result = _original(*args, **kwargs)
            if state.deferred_oom is not None:
                message, state.deferred_oom = state.deferred_oom, None
                raise torch.OutOfMemoryError(message)
            return result

        patcher.set(torch.autograd, name, wrapper)
