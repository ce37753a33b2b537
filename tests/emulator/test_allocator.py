"""CachingAllocator against hand-computed PyTorch caching-allocator figures."""

import pytest

from maya.emulator.allocator import CachingAllocator, EmulatedOutOfMemory, round_size, segment_size

MiB = 1 << 20


def test_round_size_and_segments():
    assert round_size(1) == 512
    assert round_size(512) == 512
    assert round_size(513) == 1024
    assert segment_size(512) == 2 * MiB  # small pool buffer
    assert segment_size(1 * MiB) == 2 * MiB
    assert segment_size(1 * MiB + 512) == 20 * MiB  # large request below 10 MiB
    assert segment_size(11 * MiB + 1) == 12 * MiB  # rounded up to 2 MiB


def test_small_blocks_share_a_segment_and_merge_back():
    a = CachingAllocator(1 << 30)
    b1, b2 = a.malloc(100), a.malloc(1000)
    assert a.stats.allocated_bytes == 512 + 1024
    assert a.stats.reserved_bytes == 2 * MiB and a.stats.segments == 1
    a.free(b1)
    a.free(b2)
    assert a.stats.allocated_bytes == 0
    # The two freed blocks merged with the remainder: a 2 MiB request reuses nothing small, but a
    # 1.5 MiB small-pool-sized... falls in the large pool; a 1 MiB request fits the merged block.
    b3 = a.malloc(1 * MiB)
    assert a.stats.segments == 1 and b3.size == 1 * MiB


def test_large_block_split_and_best_fit():
    a = CachingAllocator(1 << 30)
    big = a.malloc(3 * MiB)  # 20 MiB segment, split: 3 MiB used, 17 MiB free
    assert a.stats.reserved_bytes == 20 * MiB
    second = a.malloc(5 * MiB)  # best fit: the 17 MiB remainder
    assert a.stats.reserved_bytes == 20 * MiB and a.stats.segments == 1
    a.free(big)
    a.free(second)
    assert a.stats.allocated_bytes == 0 and a.stats.peak_allocated_bytes == 8 * MiB


def test_streams_do_not_share_free_blocks():
    a = CachingAllocator(1 << 30)
    a.free(a.malloc(4 * MiB, stream=0))
    a.malloc(4 * MiB, stream=1)
    assert a.stats.segments == 2


def test_oom_releases_cache_then_raises():
    a = CachingAllocator(30 * MiB)
    a.free(a.malloc(15 * MiB))  # 16 MiB segment stays cached
    a.malloc(22 * MiB)  # needs 22 MiB: 16 + 22 > 30, so the cache is released, then it fits
    assert a.stats.num_alloc_retries == 1 and a.stats.reserved_bytes == 22 * MiB
    with pytest.raises(EmulatedOutOfMemory, match="Tried to allocate"):
        a.malloc(30 * MiB)
    assert a.stats.num_ooms == 1


def test_unsplit_block_counts_whole_and_frees_back_to_zero():
    a = CachingAllocator(1 << 30)
    big = a.malloc(17 * MiB)  # an 18 MiB segment; the 1 MiB remainder is not > 1 MiB, so no split
    assert big.size == 18 * MiB
    assert a.stats.allocated_bytes == 18 * MiB  # PyTorch counts the whole block
    a.free(big)
    assert a.stats.allocated_bytes == 0
