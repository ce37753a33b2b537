"""`torch.Generator(device="cuda")` under emulation.

A CUDA generator needs PyTorch's CUDA library and a GPU (on a CPU build: "Cannot get CUDA generator
without ATen_cuda library"). Emulated random numbers have no values, so a generator only has to be
accepted: `torch.Generator("cuda")` makes a host generator that reports the CUDA device (seeding,
`initial_seed` and its state work as a host generator's), and the recorder passes the ops it is given
to none instead (`without_emulated_generator`), which the fake tensors then run without one.
"""

from __future__ import annotations

import torch

from maya.emulator.backend import is_cuda_like
from maya.emulator.fake_mode import user_device
from maya.emulator.patcher import Patcher

_HostGenerator = torch.Generator


class _AnyGenerator(type(_HostGenerator)):
    """Makes `isinstance(g, torch.Generator)` hold for the real kind too while the stand-in is
    `torch.Generator` (a host generator from `torch.Generator()` is of the real kind)."""

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, _HostGenerator)


class EmulatedCudaGenerator(_HostGenerator, metaclass=_AnyGenerator):
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
    """`kwargs` with a `generator` that stands in for the emulated GPU's made None (the `.generator`
    overloads need the argument; the fake tensors draw no numbers). The exact type: `isinstance`
    also holds for host generators (`_AnyGenerator`), which host ops use for real."""
    if type(kwargs.get("generator")) is EmulatedCudaGenerator:
        return {**kwargs, "generator": None}
    return kwargs


def install_generators(patcher: Patcher) -> None:
    """Make `torch.Generator` accept the emulated GPU (module docstring)."""
    patcher.set(torch, "Generator", EmulatedCudaGenerator)
