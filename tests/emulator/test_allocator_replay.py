"""The emulated caching allocator against a real GPU's: the same allocation sequences, figure for figure.

`benchmarks/gpu/allocator_replay.py` ran seven fixed sequences of allocations (both pools, two streams),
frees and `empty_cache` calls on an H100 (session 33) under four PYTORCH_CUDA_ALLOC_CONF settings (the
default, expandable segments, max_split_size_mb:128, roundup_power2_divisions:4), two of them under a
memory cap that makes allocations fail, and recorded `memory_allocated()`, `memory_reserved()` and
whether the allocation raised OutOfMemoryError after every operation, and `memory_stats()` at the end.
Replayed on `CachingAllocator` with the same setting, the figures match after every operation in 24 of
the 28 sequences. In the other four, best-fit ties between free blocks of the same size in different
segments are broken by device address, and the driver's addresses are not Maya's (it gives new segments
descending addresses, which settles the ties of every default and expandable sequence): those are
expected to differ, and the test says so if they start to match.
"""

import importlib.util
import sys
from pathlib import Path

import pytest

CHECK_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "allocator_replay_check.py"
_spec = importlib.util.spec_from_file_location("allocator_replay_check", CHECK_PATH)
check = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = check
_spec.loader.exec_module(check)

DATA = check.load(check.DEFAULT_REPLAY)
CASES = [(run, seq) for run in DATA["runs"] for seq in run["sequences"]]
IDS = [f"{r['config']}-{s['name']}" for r, s in CASES]
ADDRESS_TIES = {"max_split_128-random_1", "roundup_4-random_0", "roundup_4-random_small", "roundup_4-oom_random"}
"""Sequences whose figures part from the GPU's at a tie the driver's addresses decide."""
SMALL_POOL_TIES = ADDRESS_TIES | {"default-random_1", "default-oom_random", "max_split_128-oom_random"}
"""Sequences whose final inactive-split counts differ (the same ties inside the small pool, where
allocated and reserved memory still agree)."""


def test_every_setting_ran_on_the_gpu():
    assert [run["config"] for run in DATA["runs"]] == ["default", "expandable", "max_split_128", "roundup_4"]
    assert all(len(run["sequences"]) == 7 for run in DATA["runs"])
    assert sum(sum(seq["oom"]) for _, seq in CASES) > 100  # the capped sequences did run out of memory


@pytest.mark.parametrize("run, sequence", CASES, ids=IDS)
def test_memory_after_every_operation_matches_the_gpu(run, sequence, request):
    result = check.compare(run, sequence)
    if request.node.callspec.id in ADDRESS_TIES:
        assert result["differ"] > 0, "matches now: remove it from ADDRESS_TIES"
        # The largest gap so far: 704 MiB of 5,594 (roundup_4-random_small); a regression would open it further.
        assert result["worst_reserved_mib"] <= 0.15 * result["gpu_peak_reserved_mib"]
    else:
        assert result["differ"] == 0, result


@pytest.mark.parametrize("run, sequence", CASES, ids=IDS)
def test_memory_stats_match_the_gpu(run, sequence, request):
    result = check.compare(run, sequence)
    assert result["stats_compared"] == 122  # every figure Maya reports is one the GPU reported
    if request.node.callspec.id in SMALL_POOL_TIES:
        assert result["stats_differ"], "matches now: remove it from SMALL_POOL_TIES"
    else:
        assert result["stats_differ"] == [], result
