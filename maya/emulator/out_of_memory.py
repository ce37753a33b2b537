"""Out of memory in backward: raised where the script called backward, not on the autograd thread.

PyTorch's autograd engine runs a device's backward ops on its own worker thread. An emulated OOM
raised there (seen inside a checkpoint's recomputation) aborted the whole process: the C++ stack
ended in the engine's stream-guard destructor, which is `noexcept` and calls back into the
Python-registered device guard. So an emulated OOM inside a backward pass is deferred: the op goes on without its memory (the run is already lost), the engine finishes,
and the `torch.autograd.backward` / `torch.autograd.grad` call that started it raises
`torch.OutOfMemoryError`, where a real CUDA OOM in backward surfaces too.

"Inside a backward pass" is the autograd engine's own test: the current graph task's id is not -1.
Every other OOM raises at once, whatever the thread: a Ray Tune trial runs its script on a thread
that is not Python's main thread, and an OOM of its forward, deferred because of that, let the
forward go on and the backward after it abort the process in the same destructor (two trials of
the Llama study, pipelines of 4 interleaved stages over 256 H100s, on 2026-12-02).

A deferred OOM returns to the allocating code, which must then go on without the memory
(`storage_resize.py` once recorded a block it never got, and its UnboundLocalError, raised in
FSDP2's unshard inside a backward hook, aborted the process the same way).

An exception leaving a tensor hook (`Tensor.register_hook`: FSDP2's hooks, `register_multi_grad_hook`'s)
inside a backward pass aborted the process in that destructor too: a script whose hook raised ended
with rc 134 and no traceback (PyTorch raises a hook's error with Python's error indicator still set,
and the destructor's call into Python fails). So a hook's exception is deferred as well: the hook
returns nothing, the engine finishes the pass, whose gradients no longer matter, and the same
`backward` / `grad` call raises the exception with its own traceback. An autograd Function's
`backward` that raises did not abort (tests/emulator/test_raises_in_backward.py checks both); other
engine callbacks (saved-tensor unpack hooks, hooks on autograd nodes) have not been tried.

A backward pass's last buffers are let go by the engine's device thread, which may still hold its
graph task, and the last node's inputs, after the `backward` / `grad` call has returned: the
allocator then freed them at a row that depended on the threads' timing (on a busy machine, two
emulations of one rank differed by a micro-batch's input gradient). So the call returns only after
a second, empty pass has run on that thread (`settle_autograd`, set by the session: a backward of a
sum of an empty tensor, unrecorded), which the thread takes only once it is done with the first.

An aten op of a C++ backward node that raises in the dispatch mode (an op Maya cannot emulate, such
as `multilabel_margin_loss_backward`) aborted the same way, rc 134 and no message. The recorder
defers that error too and hands the dispatcher a result that is not a tensor: the engine stops the
pass with a C++ error of its own, which leaves no Python error behind, and the `backward` / `grad`
call raises the deferred error instead (the wrapper below).
"""

from __future__ import annotations

import threading

import torch

from maya.emulator import state as st
from maya.emulator.patcher import Patcher


def raise_out_of_memory(state: st.EmulationState, message: str) -> None:
    """Raise `torch.OutOfMemoryError` now, or defer it inside a backward pass (module docstring)."""
    if not in_backward():
        raise torch.OutOfMemoryError(message) from None
    defer(state, torch.OutOfMemoryError(message))


def in_backward() -> bool:
    """Whether this thread is running a backward pass (an autograd graph task)."""
    task_id = getattr(torch._C, "_current_graph_task_id", None)
    if task_id is None:  # a torch without it: the engine's device work runs off the main thread
        return threading.current_thread() is not threading.main_thread()
    return task_id() != -1


def defer(state: st.EmulationState, error: BaseException) -> None:
    """Keep the first exception raised inside a backward pass (an OOM or a hook's), to raise when the
    pass returns; later ones mostly follow from it (a hook running on without its memory)."""
    if state.deferred_error is None:
        state.deferred_error = error


def install_deferred_errors(patcher: Patcher, state: st.EmulationState) -> None:
    """Make backward and autograd.grad raise an OOM or an exception deferred on the engine's threads."""
    for name in ("backward", "grad"):
        original = getattr(torch.autograd, name)

        def wrapper(*args, _original=original, **kwargs):
            try:
                result = _original(*args, **kwargs)
            except BaseException:
                if state.deferred_error is None:
                    raise
                error, state.deferred_error = state.deferred_error, None
                raise error from None  # the engine's own error only says that the deferred one stopped it
            if state.deferred_error is not None:
                error, state.deferred_error = state.deferred_error, None
                raise error
            if state.settle_autograd is not None and not in_backward():
                state.settle_autograd()
            return result

        patcher.set(torch.autograd, name, wrapper)

    register_hook = torch.Tensor.register_hook

    def register_deferring_hook(self, hook):
        def deferring_hook(*args, **kwargs):
            try:
                return hook(*args, **kwargs)
            except BaseException as error:
                if not in_backward():
                    raise
                defer(state, error)
                return None

        return register_hook(self, deferring_hook)

    patcher.set(torch.Tensor, "register_hook", register_deferring_hook)
