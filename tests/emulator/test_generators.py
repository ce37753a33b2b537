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
