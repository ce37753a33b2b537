"""CachingAllocator against hand-computed PyTorch caching-allocator figures."""

import pytest

from maya.emulator.allocator import CachingAllocator, EmulatedOutOfMemory, round_size, segment_size
from maya.emulator.allocator_config import parse

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
    with pytest.raises(EmulatedOutOfMemory, match="Tried to allocate") as oom:
        a.malloc(30 * MiB)
    # PyTorch's advice, which the emulation can follow too.
    assert "try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in str(oom.value)
    assert a.stats.num_ooms == 1


def test_unsplit_block_counts_whole_and_frees_back_to_zero():
    a = CachingAllocator(1 << 30)
    big = a.malloc(17 * MiB)  # an 18 MiB segment; the 1 MiB remainder is not > 1 MiB, so no split
    assert big.size == 18 * MiB
    assert a.stats.allocated_bytes == 18 * MiB  # PyTorch counts the whole block
    a.free(big)
    assert a.stats.allocated_bytes == 0


def test_max_split_size_keeps_oversize_blocks_whole():
    a = CachingAllocator(1 << 30, config=parse("max_split_size_mb:40")[0])
    big = a.malloc(50 * MiB)  # oversize: its 50 MiB segment is handed out whole
    a.free(big)
    # A request under the limit never takes an oversize block: a new 20 MiB segment.
    small = a.malloc(4 * MiB)
    assert a.stats.reserved_bytes == 70 * MiB and a.stats.segments == 2
    # An oversize request reuses a cached oversize block only within 20 MiB of its size.
    a.free(small)
    far = a.malloc(42 * MiB)  # 50 >= 42 + 20? no: 50 < 62, reused whole
    assert a.stats.reserved_bytes == 70 * MiB and far.size == 50 * MiB and a.stats.allocated_bytes == 50 * MiB
    a.free(far)
    a.malloc(28 * MiB)  # 50 >= 28 + 20: not reused, a new 28 MiB segment
    assert a.stats.reserved_bytes == 98 * MiB


def test_max_split_size_releases_oversize_segments_before_the_whole_cache():
    a = CachingAllocator(100 * MiB, config=parse("max_split_size_mb:20")[0])
    a.free(a.malloc(60 * MiB))
    a.free(a.malloc(3 * MiB))  # not the 60 MiB block (oversize): a 20 MiB segment, split and merged back
    assert a.stats.reserved_bytes == 80 * MiB
    # 30 MiB: the 60 MiB block is 20 MiB too big to reuse, and 80 + 30 > 100. The cached oversize
    # segment that covers the request is released first, which is enough: the 20 MiB one stays and no
    # full release (a retry) happens.
    a.malloc(30 * MiB)
    assert a.stats.reserved_bytes == 50 * MiB and a.stats.num_alloc_retries == 0 and a.stats.segments == 2


def test_roundup_power2_divisions():
    four = parse("roundup_power2_divisions:4")[0]
    assert round_size(1200, four) == 1536  # at most 512 x 4 bytes: plain 512 rounding
    assert round_size(5000, four) == 5120  # 4096 + 1024 steps
    assert round_size(4096, four) == 4096  # a power of two stays
    assert round_size(3 * MiB + 1, four) == 3 * MiB + 512 * 1024
    listed = parse("roundup_power2_divisions:[1:8,64:2,>:1]")[0]
    # The first entry fills the intervals below it, '>' those after the last; the others stay 0.
    assert listed.roundup_divisions[:8] == (8, 0, 0, 0, 0, 0, 2, 1) and set(listed.roundup_divisions[7:]) == {1}
    assert round_size(100 * MiB + 1, listed) == 128 * MiB  # [64, 128) MiB in 2 steps
    assert round_size(1 << 30 | 1, listed) == (1 << 30) + 512  # 1 division: plain rounding


def test_expandable_segments_map_pages_as_requests_need_them():
    a = CachingAllocator(1 << 30, config=parse("expandable_segments:True")[0])
    x = a.malloc(11 * MiB)  # one 20 MiB page of the large pool's segment
    assert a.stats.reserved_bytes == 20 * MiB and a.stats.segments == 0
    y = a.malloc(11 * MiB)  # 9 MiB free at the tail: one more page maps behind it
    assert a.stats.reserved_bytes == 40 * MiB and y.addr == x.addr + 11 * MiB
    a.malloc(5 * MiB)  # fits the 18 MiB left
    assert a.stats.reserved_bytes == 40 * MiB
    a.malloc(100)  # the small pool has its own segment of 2 MiB pages
    assert a.stats.reserved_bytes == 42 * MiB
    a.free(x)
    a.free(y)
    assert a.stats.reserved_bytes == 42 * MiB  # freeing never unmaps
    a.empty_cache()  # the whole free pages go: 0-20 MiB holds only freed blocks; 20-40 MiB still 5 MiB of z
    assert a.stats.reserved_bytes == 22 * MiB


def test_expandable_segments_fill_an_unmapped_gap_first():
    a = CachingAllocator(1 << 30, config=parse("expandable_segments:True")[0])
    blocks = [a.malloc(20 * MiB) for _ in range(3)]
    a.free(blocks[1])
    a.empty_cache()  # the middle page unmaps: a hole
    assert a.stats.reserved_bytes == 40 * MiB
    again = a.malloc(15 * MiB)  # lowest address that fits: the hole, remapped
    assert again.addr == blocks[1].addr and a.stats.reserved_bytes == 60 * MiB


def test_expandable_segments_map_only_what_the_free_tail_lacks():
    a = CachingAllocator(100 * MiB, config=parse("expandable_segments:True")[0])
    x = a.malloc(60 * MiB)
    a.malloc(100)  # the small pool's 2 MiB page
    a.free(x)
    a.malloc(70 * MiB)  # the 60 free MiB at the tail plus one more page
    assert a.stats.reserved_bytes == 82 * MiB and a.stats.num_alloc_retries == 0
    with pytest.raises(EmulatedOutOfMemory) as oom:
        a.malloc(30 * MiB)  # 10 MiB free at the tail, one more page would pass 100 MiB; no whole page is free
    assert "expandable_segments" not in str(oom.value)  # already on: PyTorch's hint is left out
    assert a.stats.num_alloc_retries == 1 and a.stats.num_ooms == 1


def test_expandable_segments_out_of_memory_retry_unmaps_other_streams_pages():
    a = CachingAllocator(100 * MiB, config=parse("expandable_segments:True")[0])
    a.free(a.malloc(60 * MiB, stream=0))
    a.malloc(50 * MiB, stream=1)  # its own segment, 3 pages: 60 + 60 > 100 until stream 0's pages unmap
    assert a.stats.num_alloc_retries == 1 and a.stats.reserved_bytes == 60 * MiB


def test_memory_fraction_and_garbage_collection():
    a = CachingAllocator(1 << 30, config=parse("garbage_collection_threshold:0.5")[0], device_total_bytes=1 << 30)
    a.set_memory_fraction(0.2)  # cap 204.8 MiB, collection above 102.4 MiB
    for size in (40, 50, 60):  # none fits the next: three cached segments, freed after searches 1, 2, 3
        a.free(a.malloc(size * MiB))
    assert a.stats.reserved_bytes == 150 * MiB
    # 70 MiB: nothing cached fits and 150 > 102.4: ages 3, 2, 1 at search 4, average 2: the 40 and 50 MiB
    # segments go (90 MiB >= the 47.6 over), the 60 stays; no retry.
    a.malloc(70 * MiB)
    assert a.stats.reserved_bytes == 130 * MiB and a.stats.segments == 2 and a.stats.num_alloc_retries == 0
    a.malloc(80 * MiB)  # 130 > 102.4 again: the 60 MiB segment (the only one, as old as the average) goes
    assert a.stats.reserved_bytes == 150 * MiB
    with pytest.raises(EmulatedOutOfMemory):
        a.malloc(60 * MiB)  # 150 + 60 > 204.8 with nothing cached
    a.set_memory_fraction(1.0)  # lifts the cap: the device's capacity is the limit again
    a.malloc(60 * MiB)
    assert a.stats.reserved_bytes == 210 * MiB


def test_bad_allocator_settings_are_named():
    with pytest.raises(ValueError, match="max_split_size_mb: 10 MiB is below the 20 MiB minimum"):
        parse("max_split_size_mb:10")
    with pytest.raises(ValueError, match="roundup_power2_divisions: 3 must be a power of two"):
        parse("roundup_power2_divisions:3")
    with pytest.raises(ValueError, match="expandable_segments: expected True or False"):
        parse("expandable_segments:yes")
    config, ignored = parse("backend:cudaMallocAsync,pinned_use_cuda_host_register:True,expandable_segments:True")
    assert ignored == ["backend:cudaMallocAsync"] and config.expandable_segments
    # Each parse starts the split limit from its default again; expandable segments stay as they were.
    again = parse("roundup_power2_divisions:2", parse("max_split_size_mb:64,expandable_segments:True")[0])[0]
    assert again.max_split_size is None and again.expandable_segments


def test_memory_stats_by_pool_as_pytorch_reports_them():
    a = CachingAllocator(1 << 30)
    x = a.malloc(100)  # small pool: a 2 MiB segment split into 512 bytes and an inactive remainder
    y = a.malloc(3 * MiB)  # large pool: a 20 MiB segment, 17 MiB of it an inactive split
    a.free(x)  # merges back into a whole segment: no inactive split left in the small pool
    stats = a.memory_stats()
    assert stats["allocation"]["all"] == {"current": 1, "peak": 2, "allocated": 2, "freed": 1}
    assert stats["allocated_bytes"]["large_pool"]["current"] == 3 * MiB
    assert stats["active_bytes"]["all"]["peak"] == 3 * MiB + 512
    assert stats["requested_bytes"]["small_pool"] == {"current": 0, "peak": 100, "allocated": 100, "freed": 100}
    assert stats["segment"]["all"]["current"] == 2 and stats["reserved_bytes"]["small_pool"]["current"] == 2 * MiB
    assert stats["inactive_split"]["large_pool"]["current"] == 1
    assert stats["inactive_split_bytes"]["large_pool"]["current"] == 17 * MiB
    assert stats["inactive_split"]["small_pool"] == {"current": 0, "peak": 1, "allocated": 1, "freed": 1}
    assert stats["max_split_size"] == -1 and stats["num_sync_all_streams"] == 0
    a.free(y)
    a.empty_cache()
    stats = a.memory_stats()
    assert stats["num_sync_all_streams"] == 1 and stats["segment"]["all"]["current"] == 0
    assert stats["inactive_split_bytes"]["large_pool"]["current"] == 0
    a.reset_peak()
    a.reset_accumulated()
    stats = a.memory_stats()
    assert stats["allocation"]["all"] == {"current": 0, "peak": 0, "allocated": 0, "freed": 0}
    assert stats["num_device_alloc"] == 0 and stats["num_sync_all_streams"] == 0


def test_a_settings_fraction_does_not_undo_a_later_set_per_process_memory_fraction():
    a = CachingAllocator(1 << 30, config=parse("per_process_memory_fraction:0.5")[0], device_total_bytes=1 << 30)
    assert a.limit_bytes == 512 * MiB
    a.set_memory_fraction(0.25)
    a.configure(parse("expandable_segments:True", a.config)[0])  # the fraction key is not given again
    assert a.limit_bytes == 256 * MiB
