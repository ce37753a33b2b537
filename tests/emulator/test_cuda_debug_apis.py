"""torch.cuda's allocator-history debugging calls under emulation: they do nothing, with a warning."""

import pytest
import torch

from maya.emulator.session import EmulationSession
from maya.emulator.state import RankConfig
from maya.hardware.gpu import load_gpu


def test_memory_history_and_snapshots_warn_and_do_nothing(tmp_path):
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))):
        with pytest.warns(UserWarning, match="_record_memory_history does nothing under Maya emulation"):
            torch.cuda.memory._record_memory_history(max_entries=1000)
        x = torch.randn(1024, 1024, device="cuda")
        with pytest.warns(UserWarning, match="memory_snapshot does nothing"):
            assert torch.cuda.memory_snapshot() == []
        with pytest.warns(UserWarning, match="_dump_snapshot does nothing"):
            torch.cuda.memory._dump_snapshot(str(tmp_path / "snap.pickle"))
        assert not (tmp_path / "snap.pickle").exists() and x.is_cuda
        assert torch.cuda.memory_allocated() >= 4 * 1024 * 1024  # Maya's own figures still answer
