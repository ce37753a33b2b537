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


def test_memory_stats_has_every_figure_pytorch_reports():
    # Training loops log these by name (torchtitan's memory monitor reads active_bytes.all.peak and
    # num_alloc_retries); only the total figures used to be there, so such a script stopped on a KeyError.
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))):
        x = torch.empty(3 << 20, dtype=torch.uint8, device="cuda")
        stats = torch.cuda.memory_stats()
        assert stats["active_bytes.all.peak"] == 3 << 20
        assert stats["allocated_bytes.large_pool.current"] == 3 << 20
        assert stats["segment.large_pool.current"] == 1 and stats["num_alloc_retries"] == 0
        assert stats["inactive_split_bytes.all.current"] == 17 << 20
        nested = torch.cuda.memory_stats_as_nested_dict()
        assert nested["reserved_bytes"]["all"]["current"] == torch.cuda.memory_reserved() == 20 << 20
        del x
        torch.cuda.reset_accumulated_memory_stats()
        assert torch.cuda.memory_stats()["allocation.all.freed"] == 0
        assert list(stats) == sorted(stats)  # sorted by name, as PyTorch returns them
