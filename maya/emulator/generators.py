"""`torch.Generator(device="cuda")` under emulation.

A CUDA generator needs PyTorch's CUDA library and a GPU (on a CPU build: "Cannot get CUDA generator
without ATen_cuda library"). Emulated random numbers have no values, so a generator only has to be
accepted: `torch.Generator("cuda")` makes a host generator that reports the CUDA device (seeding and
`initial_seed` work as a host generator's), and the recorder passes the ops it is given to none
instead (`without_emulated_generator`), which the fake tensors then run without one. Its state is a
CUDA generator's: 16 bytes (Philox seed and offset), which `set_state` checks and keeps, and
`graphsafe_get_state` / `graphsafe_set_state` / `clone_state` (CUDA graph-safe states) work on copies.

`torch.cuda.default_generators` holds one per emulated device (empty on a CPU build), and
`torch.cuda.get_rng_state` / `set_rng_state` / `manual_seed` act on them: Megatron-Core's RNG tracker
saves and restores the CUDA state through them (`tensor_parallel.random`).
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

    def get_state(self) -> torch.Tensor:
        state = getattr(self, "_state", None)
        if state is None:  # the seed, then an offset of 0, as a fresh CUDA generator reports them
            state = torch.tensor([self.initial_seed(), 0], dtype=torch.int64).view(torch.uint8)
        return state.clone()

    def set_state(self, new_state: torch.Tensor) -> EmulatedCudaGenerator:
        if not isinstance(new_state, torch.Tensor) or new_state.dtype != torch.uint8 or new_state.numel() != CUDA_STATE_BYTES:
            raise RuntimeError(f"RNG state is wrong size: a CUDA generator's state is {CUDA_STATE_BYTES} bytes (uint8)")
        self._state = new_state.detach().to("cpu").clone()
        return self

    def manual_seed(self, seed: int) -> EmulatedCudaGenerator:
        super().manual_seed(seed)
        self._state = None
        return self

    def clone_state(self) -> EmulatedCudaGenerator:
        twin = EmulatedCudaGenerator(self._device)
        twin.manual_seed(self.initial_seed())
        twin._state = self.get_state()
        return twin

    def graphsafe_get_state(self) -> EmulatedCudaGenerator:
        return self.clone_state()

    def graphsafe_set_state(self, state: EmulatedCudaGenerator) -> EmulatedCudaGenerator:
        self._state = state.get_state()
        return self


CUDA_STATE_BYTES = 16
"""A CUDA generator's state: its Philox seed and offset, 8 bytes each."""


def without_emulated_generator(kwargs: dict) -> dict:
    """`kwargs` with a `generator` that stands in for the emulated GPU's made None (the `.generator`
    overloads need the argument; the fake tensors draw no numbers). The exact type: `isinstance`
    also holds for host generators (`_AnyGenerator`), which host ops use for real."""
    if type(kwargs.get("generator")) is EmulatedCudaGenerator:
        return {**kwargs, "generator": None}
    return kwargs


def install_generators(patcher: Patcher, devices: int) -> None:
    """Make `torch.Generator` accept the emulated GPU, and give each of the `devices` emulated GPUs a
    default generator (module docstring)."""
    patcher.set(torch, "Generator", EmulatedCudaGenerator)
    generators = tuple(EmulatedCudaGenerator(torch.device("cuda", i)) for i in range(devices))
    for g in generators:
        g.manual_seed(DEFAULT_SEED)
    patcher.set(torch.cuda, "default_generators", generators)
    if hasattr(torch.cuda.random, "default_generators"):
        patcher.set(torch.cuda.random, "default_generators", generators)


DEFAULT_SEED = 67280421310721
"""CUDA's default generator seed (c10's default_rng_seed_val), before any `manual_seed`."""


def default_generator(device: object = None) -> EmulatedCudaGenerator:
    """The emulated default generator of `device` (an index, a `cuda:N` device or None: the current one)."""
    if device is None or (isinstance(device, str) and device == "cuda"):
        index = user_device().index
    elif isinstance(device, int):
        index = device
    else:
        index = torch.device(device).index
        index = user_device().index if index is None else index
    return torch.cuda.default_generators[index]


def _manual_seed(seed: int) -> None:
    default_generator().manual_seed(int(seed))


def _manual_seed_all(seed: int) -> None:
    for g in torch.cuda.default_generators:
        g.manual_seed(int(seed))


def _seed() -> None:
    default_generator().seed()


def _seed_all() -> None:
    seed = default_generator().seed()
    for g in torch.cuda.default_generators:
        g.manual_seed(seed)


def _set_rng_state(new_state: torch.Tensor, device: object = "cuda") -> None:
    default_generator(device).set_state(new_state)


def _set_rng_state_all(new_states) -> None:
    for g, state in zip(torch.cuda.default_generators, new_states):
        g.set_state(state)


CUDA_RNG_FUNCTIONS = {
    "manual_seed": _manual_seed,
    "manual_seed_all": _manual_seed_all,
    "seed": _seed,
    "seed_all": _seed_all,
    "initial_seed": lambda: default_generator().initial_seed(),
    "get_rng_state": lambda device="cuda": default_generator(device).get_state(),
    "get_rng_state_all": lambda: [g.get_state() for g in torch.cuda.default_generators],
    "set_rng_state": _set_rng_state,
    "set_rng_state_all": _set_rng_state_all,
}
"""torch.cuda's RNG functions on the emulated default generators (`install_generators`)."""
