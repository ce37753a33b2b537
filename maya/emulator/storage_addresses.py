"""`install_storage_addresses`: emulated GPU tensors answer `data_ptr()` with their emulated address.

A fake tensor's storage is a meta storage whose data pointer is 0, so every emulated tensor seemed to
share one address. Code that tells storages apart by their pointer then took distinct tensors for
shared ones: Hugging Face `save_pretrained` found "shared tensors ... not properly defined" among
weights of equal size (`transformers.modeling_utils.id_tensor_storage`), and a script's own
weight-tying check (`a.data_ptr() == b.data_ptr()`) held for any two tensors. Under emulation a GPU
storage answers the address of the block the caching-allocator emulation gave it
(`maya.emulator.allocator`: distinct for live storages, reused after a free as on a GPU, 0 for an
empty or freed storage), and a tensor adds its offset, as `Tensor.data_ptr` does. Host fake tensors
answer 0: code that reads host memory through a pointer must fail there and never read an address
that holds nothing.
"""

from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import FakeTensor

from maya.emulator.patcher import Patcher
from maya.emulator.state import EmulationState


def install_storage_addresses(patcher: Patcher, state: EmulationState) -> None:
    storage_data_ptr = torch.UntypedStorage.data_ptr
    tensor_data_ptr = torch.Tensor.data_ptr
    live = state.live_storages

    def untyped_storage_data_ptr(self: torch.UntypedStorage) -> int:
        entry = live.get(self._cdata)
        return entry[0].addr if entry is not None else storage_data_ptr(self)

    def data_ptr(self: torch.Tensor) -> int:
        if type(self) is FakeTensor:
            entry = live.get(self.untyped_storage()._cdata)
            # No block: empty, freed, or a host fake tensor, none of which has memory to point to.
            return entry[0].addr + self.storage_offset() * self.element_size() if entry is not None else 0
        return tensor_data_ptr(self)

    patcher.set(torch.UntypedStorage, "data_ptr", untyped_storage_data_ptr)
    patcher.set(torch.Tensor, "data_ptr", data_ptr)
