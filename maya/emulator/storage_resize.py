"""`install_storage_resize`: `UntypedStorage.resize_` frees and re-allocates emulated GPU memory.

FSDP2 keeps each unsharded parameter's tensor alive and frees its memory between uses with
`tensor.untyped_storage().resize_(0)`, re-allocating it with `resize_(nbytes)` before the next
all-gather (torch/distributed/fsdp/_fully_shard/_fsdp_common.py). On fake tensors that resize never
reaches a dispatch mode, so the caching-allocator emulation follows it here: resizing to zero frees
the storage's block, resizing up allocates a new one on the current stream.
"""

from __future__ import annotations

import weakref

import torch

from maya.emulator.allocator import EmulatedOutOfMemory
from maya.emulator.out_of_memory import raise_out_of_memory
from maya.emulator.patcher import Patcher
from maya.emulator.state import EmulationState


def install_storage_resize(patcher: Patcher, state: EmulationState) -> None:
    original = torch.UntypedStorage.resize_
    emptied: set[int] = set()
    """Keys of GPU storages resized to zero: fake CPU storages are meta too, so only these grow back."""

    def release(key: int, _ref: object = None) -> None:
        entry = state.live_storages.pop(key, None)
        if entry is not None:
            state.allocator.free(entry[0])

    def resize_(self: torch.UntypedStorage, size: int):
        result = original(self, size)
        key = self._cdata
        if key in state.live_storages or key in emptied:
            release(key)
            emptied.add(key)
            if size > 0:
                emptied.discard(key)
                try:
                    block = state.allocator.malloc(int(size), state.current_stream)
                except EmulatedOutOfMemory as e:
                    state.oom = True
                    state.note_memory()
                    raise_out_of_memory(state, str(e))
                    return result  # deferred inside backward: the storage grows without emulated memory
                state.live_storages[key] = (block, weakref.ref(self, lambda ref, key=key: release(key)))
            state.note_memory()
        return result

    patcher.set(torch.UntypedStorage, "resize_", resize_)
