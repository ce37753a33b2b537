"""`torch.Generator(device="cuda")` under emulation: accepted, seeded, and passed to random ops."""

from __future__ import annotations

import torch

from maya.emulator.session import EmulationSession
from maya.emulator.state import ROW_FIELDS, RankConfig
from maya.hardware.gpu import load_gpu

OP, OUTPUTS = (ROW_FIELDS.index(f) for f in ("op", "outputs"))


def test_a_cuda_generator_seeds_and_drives_random_ops_on_the_emulated_gpu():
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))) as state:
        g = torch.Generator(device="cuda")
        assert isinstance(g, torch.Generator) and g.device == torch.device("cuda", 0)
        assert g.manual_seed(7).initial_seed() == 7
        first = len(state.rows)
        x = torch.randn(4, 8, device="cuda", generator=g)
        perm = torch.randperm(10, device="cuda", generator=g)
        picks = torch.multinomial(torch.rand(4, 10, device="cuda"), 2, generator=g)
        rows = state.rows[first:]
        assert x.is_cuda and perm.is_cuda and tuple(picks.shape) == (4, 2)
        # A host generator is still the real kind, with values.
        host = torch.Generator()
        host.manual_seed(0)
        assert type(host) is torch._C.Generator and torch.randn(2, generator=host).tolist() == torch.randn(
            2, generator=torch.Generator().manual_seed(0)).tolist()
    assert [r[OP].split(".")[0] for r in rows if r[OP].split(".")[0] in ("aten::randn", "aten::randperm", "aten::multinomial")
            ] == ["aten::randn", "aten::randperm", "aten::multinomial"]
    assert torch.Generator is torch._C.Generator  # put back after the emulation


def test_host_generators_stay_generators_and_drive_host_ops():
    from torch.utils.data import TensorDataset, random_split

    with EmulationSession(RankConfig(gpu=load_gpu("h200"))):
        host = torch.Generator().manual_seed(0)
        assert isinstance(host, torch.Generator)  # the real kind passes the stand-in's isinstance
        first, second = random_split(TensorDataset(torch.arange(10.0)), [7, 3], generator=host)
        assert sorted(first.indices + second.indices) == list(range(10))


def test_default_cuda_generators_keep_a_cuda_state_per_device():
    # Megatron-Core's RNG tracker saves torch.cuda.get_rng_state(), seeds, and puts the state back
    # through torch.cuda.default_generators[device] (empty on a CPU build, which failed with IndexError).
    import pytest

    config = RankConfig(gpu=load_gpu("h200"), rank=1, world_size=2, local_rank=1, local_world_size=2)
    with EmulationSession(config):
        torch.cuda.set_device(1)
        generators = torch.cuda.default_generators
        assert len(generators) == 2 and generators[1].device == torch.device("cuda", 1)
        saved = torch.cuda.get_rng_state()
        assert saved.dtype == torch.uint8 and saved.numel() == 16
        torch.cuda.manual_seed(1234)
        assert torch.cuda.initial_seed() == 1234 and generators[0].initial_seed() != 1234
        assert not torch.equal(torch.cuda.get_rng_state(), saved)
        generators[1].set_state(saved)
        assert torch.equal(torch.cuda.get_rng_state(1), saved)
        twin = generators[1].graphsafe_get_state()
        torch.cuda.manual_seed_all(5)
        generators[1].graphsafe_set_state(twin)
        assert torch.equal(generators[1].get_state(), saved) and generators[0].initial_seed() == 5
        with pytest.raises(RuntimeError, match="RNG state is wrong size"):
            torch.cuda.set_rng_state(torch.zeros(5056, dtype=torch.uint8))
        with torch.random.fork_rng(devices=[1]):
            torch.cuda.manual_seed(99)
        assert torch.equal(torch.cuda.get_rng_state(1), saved)
    assert torch.cuda.default_generators == () or torch.cuda.is_available()  # put back
