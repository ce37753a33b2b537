"""`torch.Generator(device="cuda")` under emulation.

A CUDA generator needs PyTorch's CUDA library and a GPU (on a CPU build: "Cannot get CUDA generator
without ATen_cuda library"). Emulated random numbers have no values, so a generator only has to be
accepted: `torch.Generator("cuda")` makes a host generator that reports the CUDA device (seeding,
`initial_seed` and its state work as a host generator's), and the recorder drops it from the ops it
is passed to (`without_emulated_generator`), which the fake tensors then run without one.
"""

from __future__ import annotations

import torch

from maya.emulator.backend import is_cuda_like
from maya.emulator.fake_mode import user_device
from maya.emulator.patcher import Patcher

_HostGenerator = torch.Generator


class EmulatedCudaGenerator(_HostGenerator):
    """A host generator standing in for one of the emulated GPU; other devices make the real kind."""

    def __new__(cls, device="cpu"):
        if not is_cuda_like(device) and not isinstance(device, int):
            return _HostGenerator(device)
        generator = super().__new__(cls, "cpu")
        index = device if isinstance(device, int) else torch.device(device).index
        generator._device = user_device() if index is None else torch.device("cuda", index)
        return generator

    @property
    def device(self) -> torch.device:
        return self._device


def without_emulated_generator(kwargs: dict) -> dict:
    """`kwargs` without a `generator` that stands in for the emulated GPU's."""
    if isinstance(kwargs.get("generator"), EmulatedCudaGenerator):
        return {k: v for k, v in kwargs.items() if k != "generator"}
    return kwargs


def install_generators(patcher: Patcher) -> None:
    """Make `torch.Generator` accept the emulated GPU (module docstring)."""
    patcher.set(torch, "Generator", EmulatedCudaGenerator)
