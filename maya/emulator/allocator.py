"""`CachingAllocator`: an emulation of PyTorch's CUDA caching allocator.

It reproduces the rules that decide `memory_allocated` / `memory_reserved` and when an
allocation runs out of memory (c10/cuda/CUDACachingAllocator.cpp, PyTorch 2.9-2.11):
- request sizes round up to a multiple of 512 bytes (kMinBlockSize), or to a power-of-two division
  with `roundup_power2_divisions`;
- requests of at most 1 MiB (kSmallSize) use the small pool, whose segments are 2 MiB (kSmallBuffer);
- larger requests use the large pool: a request under 10 MiB (kMinLargeAlloc) gets a 20 MiB segment
  (kLargeBuffer); a larger one gets a segment rounded up to 2 MiB (kRoundLarge);
- a free block is found best-fit (smallest that fits) within the same pool *and stream*;
- a block is split when the remainder is at least 512 bytes (small pool) or more than 1 MiB (large);
- a freed block merges with free neighbours of the same segment;
- new segments get descending device addresses, as the CUDA driver gave them when an H100 replayed
  fixed allocation sequences (benchmarks/gpu/allocator_replay.py): best-fit ties between equal free
  blocks of different segments fall to the lowest address, so this order decides them;
- when a new segment would exceed device memory, every fully free cached segment is released
  (as `cudaFree`) and the allocation retried once before raising OutOfMemoryError.
The `PYTORCH_CUDA_ALLOC_CONF` settings of `maya.emulator.allocator_config` change these rules:
- `max_split_size_mb`: large blocks of that size or more are never split; a smaller request never takes
  one, a larger one only within `max_non_split_rounding_mb`; before the full release, cached oversize
  segments are released one by one (`release_available_cached_blocks`);
- `expandable_segments`: each pool and stream gets one segment of virtual addresses that maps pages (2 MiB
  small, 20 MiB large) as requests need them, at the lowest address where free and unmapped space fit the
  request; every split leaves the remainder if it is at least 512 bytes; reserved memory is the mapped
  pages; freeing never unmaps, `empty_cache` and the out-of-memory retry unmap the whole free pages;
- `garbage_collection_threshold` (with a memory fraction): before a new segment, whole free large-pool
  segments unused for at least the average age are released until reserved memory is back under the
  threshold.
Sizes are bytes throughout.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass

from maya.emulator.allocator_config import DEFAULT, AllocatorConfig

MIN_BLOCK_BYTES = 512
SMALL_SIZE_BYTES = 1 << 20
SMALL_BUFFER_BYTES = 2 << 20
LARGE_BUFFER_BYTES = 20 << 20
MIN_LARGE_ALLOC_BYTES = 10 << 20
ROUND_LARGE_BYTES = 2 << 20
EXPANDABLE_ADDRESS_FACTOR = 1.125
"""An expandable segment reserves addresses for 1 1/8 of the GPU's memory (ExpandableSegment)."""


def round_size(size_bytes: int, config: AllocatorConfig = DEFAULT) -> int:
    """Bytes the allocator actually hands out for a request of `size_bytes`."""
    if size_bytes < MIN_BLOCK_BYTES:
        return MIN_BLOCK_BYTES
    divisions = config.divisions(size_bytes)
    if divisions > 1 and size_bytes > MIN_BLOCK_BYTES * divisions:
        if size_bytes & (size_bytes - 1) == 0:
            return size_bytes
        step = (1 << (size_bytes.bit_length() - 1)) // divisions
        return -(-size_bytes // step) * step
    return -(-size_bytes // MIN_BLOCK_BYTES) * MIN_BLOCK_BYTES


def segment_size(rounded_bytes: int) -> int:
    """Bytes of a new segment (one cudaMalloc) for a rounded request."""
    if rounded_bytes <= SMALL_SIZE_BYTES:
        return SMALL_BUFFER_BYTES
    if rounded_bytes < MIN_LARGE_ALLOC_BYTES:
        return LARGE_BUFFER_BYTES
    return -(-rounded_bytes // ROUND_LARGE_BYTES) * ROUND_LARGE_BYTES


class Block:
    """A contiguous piece of one segment: allocated, free, or (in an expandable segment) unmapped."""

    __slots__ = ("addr", "size", "stream", "small", "segment", "allocated", "prev", "next", "mapped", "gc_base",
                 "requested")

    def __init__(self, addr: int, size: int, stream: int, small: bool, segment: int, mapped: bool = True) -> None:
        self.addr = addr
        self.size = size
        self.stream = stream
        self.small = small
        self.segment = segment
        self.allocated = False
        self.mapped = mapped
        self.gc_base = 0
        self.requested = 0
        self.prev: Block | None = None
        self.next: Block | None = None

    @property
    def whole_segment(self) -> bool:
        return self.prev is None and self.next is None


@dataclass(slots=True)
class _Expandable:
    """One expandable segment: its base address and page size."""

    base: int
    page: int


POOL_STATS = ("allocation", "segment", "active", "inactive_split", "allocated_bytes", "reserved_bytes", "active_bytes",
              "inactive_split_bytes", "requested_bytes")
"""The per-pool figures of `torch.cuda.memory_stats()`, each with current, peak, allocated and freed."""
POOLS = ("all", "large_pool", "small_pool")
METRICS = ("current", "peak", "allocated", "freed")


class _Stats:
    """PyTorch's DeviceStats beyond `AllocatorStats`: [current, peak, allocated, freed] per figure and pool.

    Allocations and their bytes (requested and rounded), and inactive splits, change on most mallocs and
    frees, so each pool keeps them in one flat list of consecutive [current, peak, allocated, freed]. `active` equals `allocation` here: a
    block is inactive only while its frees wait for another stream's events, which are not emulated.
    """

    def __init__(self) -> None:
        self.pools = {name: [[0, 0, 0, 0] for _ in POOLS] for name in ("segment", "reserved_bytes")}
        # per pool: inactive_split, inactive_split_bytes, each current/peak/allocated/freed
        self.splits = [[0] * 8 for _ in POOLS]
        # per pool: allocation, allocated_bytes, requested_bytes, each current/peak/allocated/freed
        self.usage = [[0] * 12 for _ in POOLS]
        self.oversize = {name: [0, 0, 0, 0] for name in ("oversize_allocations", "oversize_segments")}
        self.num_sync_all_streams = 0

    def change(self, name: str, small: bool, delta: int) -> None:
        stats = self.pools[name]
        _change(stats[0], delta)
        _change(stats[2 if small else 1], delta)

    def allocated(self, small: bool, size: int, requested: int) -> None:
        # _change(st, 1), _change(st, size, 4), _change(st, requested, 8), inlined: this runs on every malloc.
        for st in (self.usage[0], self.usage[2 if small else 1]):
            st[0] += 1
            st[2] += 1
            if st[0] > st[1]:
                st[1] = st[0]
            st[4] += size
            st[6] += size
            if st[4] > st[5]:
                st[5] = st[4]
            st[8] += requested
            st[10] += requested
            if st[8] > st[9]:
                st[9] = st[8]

    def freed(self, small: bool, size: int, requested: int) -> None:
        for st in (self.usage[0], self.usage[2 if small else 1]):
            st[0] -= 1
            st[3] += 1
            st[4] -= size
            st[7] += size
            st[8] -= requested
            st[11] += requested

    def split(self, small: bool, count: int, nbytes: int) -> None:
        """inactive_split and inactive_split_bytes change by `count` and `nbytes`."""
        for st in (self.splits[0], self.splits[2 if small else 1]):
            if count:
                _change(st, count)
            if nbytes:
                _change(st, nbytes, 4)

    def by_name(self) -> dict[str, list[list[int]]]:
        """Every per-pool figure by its memory_stats name."""
        flat = {name: [pool[4 * i:4 * i + 4] for pool in self.usage]
                for i, name in enumerate(("allocation", "allocated_bytes", "requested_bytes"))}
        flat.update({name: [pool[4 * i:4 * i + 4] for pool in self.splits]
                     for i, name in enumerate(("inactive_split", "inactive_split_bytes"))})
        return {**self.pools, **flat, "active": flat["allocation"], "active_bytes": flat["allocated_bytes"]}

    def _all(self) -> list[list[int]]:
        return [*(s for pools in self.pools.values() for s in pools), *self.oversize.values()]

    def reset_peak(self) -> None:
        for stat in self._all():
            stat[1] = stat[0]
        for pool in self.usage:
            pool[1], pool[5], pool[9] = pool[0], pool[4], pool[8]
        for pool in self.splits:
            pool[1], pool[5] = pool[0], pool[4]

    def reset_accumulated(self) -> None:
        for stat in self._all():
            stat[2] = stat[3] = 0
        for pool in self.usage:
            pool[2] = pool[3] = pool[6] = pool[7] = pool[10] = pool[11] = 0
        for pool in self.splits:
            pool[2] = pool[3] = pool[6] = pool[7] = 0
        self.num_sync_all_streams = 0


def _change(stat: list[int], delta: int, at: int = 0) -> None:
    """increase_stat / decrease_stat on the [current, peak, allocated, freed] at `stat[at:at + 4]`: current
    moves, peak follows it up, allocated or freed counts it."""
    stat[at] += delta
    if delta > 0:
        stat[at + 2] += delta
        if stat[at] > stat[at + 1]:
            stat[at + 1] = stat[at]
    else:
        stat[at + 3] -= delta


class EmulatedOutOfMemory(Exception):
    """Raised by `CachingAllocator.malloc`; the emulator turns it into torch.cuda.OutOfMemoryError."""

    def __init__(self, message: str, requested_bytes: int) -> None:
        super().__init__(message)
        self.requested_bytes = requested_bytes


class AllocatorStats:
    """Running totals, named as in `torch.cuda.memory_stats()` (all pools together): the "all" figures of
    the allocator's per-pool statistics, read from them, and the event counts."""

    __slots__ = ("_detail", "num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free")

    def __init__(self, detail: _Stats) -> None:
        self._detail = detail
        self.num_alloc_retries = 0
        self.num_ooms = 0
        self.num_device_alloc = 0
        self.num_device_free = 0

    @property
    def allocated_bytes(self) -> int:
        return self._detail.usage[0][4]

    @property
    def peak_allocated_bytes(self) -> int:
        return self._detail.usage[0][5]

    @property
    def active_blocks(self) -> int:
        return self._detail.usage[0][0]

    @property
    def reserved_bytes(self) -> int:
        return self._detail.pools["reserved_bytes"][0][0]

    @property
    def peak_reserved_bytes(self) -> int:
        return self._detail.pools["reserved_bytes"][0][1]

    @property
    def segments(self) -> int:
        return self._detail.pools["segment"][0][0]


class CachingAllocator:
    """Tracks blocks and segments of one emulated GPU.

    Args:
        capacity_bytes: memory available to the allocator (device memory less the CUDA context).
        device_name: used in out-of-memory messages.
        config: the allocator settings (`maya.emulator.allocator_config`), or a callable that gives them
            at the first allocation, when PyTorch reads PYTORCH_CUDA_ALLOC_CONF (a script may set it first).
        device_total_bytes: the GPU's whole memory, which a memory fraction is of (default capacity_bytes).
    """

    def __init__(self, capacity_bytes: int, device_name: str = "GPU 0",
                 config: AllocatorConfig | Callable[[], AllocatorConfig] = DEFAULT,
                 device_total_bytes: int | None = None) -> None:
        self.capacity_bytes = capacity_bytes
        self.device_name = device_name
        self.device_total_bytes = capacity_bytes if device_total_bytes is None else device_total_bytes
        self.config = DEFAULT
        self._plain_rounding = True
        self._pending_config = config if callable(config) else None
        self.limit_bytes: int | None = None
        """The cap of `torch.cuda.set_per_process_memory_fraction` (None: none but the device)."""
        if not callable(config):
            self.configure(config)
        self._detail = _Stats()
        self.stats = AllocatorStats(self._detail)
        # (small, stream) -> sorted [(size, addr)] of free mapped blocks; addr -> Block for lookups.
        self._free: dict[tuple[bool, int], list[tuple[int, int]]] = {}
        # (small, stream) -> sorted [addr] of unmapped blocks of expandable segments.
        self._unmapped: dict[tuple[bool, int], list[int]] = {}
        self._blocks: dict[int, Block] = {}
        self._next_addr = 1 << 40  # cudaMalloc's next segment ends here: the driver hands out descending addresses
        self._next_reserve = 1 << 41  # expandable segments' address reservations, ascending
        self._next_segment = 0
        self._segment_heads: dict[int, Block] = {}
        self._expandable: dict[int, _Expandable] = {}
        self._gc_clock = {True: 0, False: 0}  # get_free_block calls per pool, the garbage collector's age
        self._merged_count = 0

    def configure(self, config: AllocatorConfig) -> None:
        """New settings from now on (`torch.cuda.memory._set_allocator_settings`); blocks already made stay."""
        self.settle_config()
        previous, self.config = self.config, config
        self._plain_rounding = not any(config.roundup_divisions)
        # A fraction the settings give applies when they give it, not again over a later
        # set_per_process_memory_fraction when other settings change.
        if config.memory_fraction is not None and config.memory_fraction != previous.memory_fraction:
            self.set_memory_fraction(config.memory_fraction)

    def set_memory_fraction(self, fraction: float) -> None:
        """`torch.cuda.set_per_process_memory_fraction`: reserved memory may not pass this share of the GPU
        (1.0 lifts the cap, as in PyTorch 2.9+)."""
        self.limit_bytes = None if fraction >= 1 else int(fraction * self.device_total_bytes)

    def settle_config(self) -> None:
        """Read the settings given as a callable now, if not yet read (the first allocation does it)."""
        if self._pending_config is not None:
            pending, self._pending_config = self._pending_config, None
            self.configure(pending())

    def malloc(self, size_bytes: int, stream: int = 0) -> Block:
        """Allocate `size_bytes` on `stream`; raises EmulatedOutOfMemory like the real allocator."""
        if self._pending_config is not None:
            self.settle_config()
        if self._plain_rounding:
            size = MIN_BLOCK_BYTES if size_bytes < MIN_BLOCK_BYTES else -(-size_bytes // MIN_BLOCK_BYTES) * MIN_BLOCK_BYTES
        else:
            size = round_size(size_bytes, self.config)
        small = size <= SMALL_SIZE_BYTES
        block = self._get_free_block(size, small, stream)
        if block is None:
            block = self._alloc_new(size, small, stream, size_bytes)
        detail = self._detail
        expandable = block.segment in self._expandable
        already_split = not block.whole_segment
        if self._should_split(block, size):
            if not expandable:
                if already_split:
                    detail.split(small, 0, -size)
                else:
                    detail.split(small, 1, block.size - size)
            self._insert_free(self._split_off(block, size))
        elif already_split and not expandable:
            detail.split(small, -1, -block.size)
        block.allocated = True
        block.requested = size_bytes
        detail.allocated(small, block.size, size_bytes)  # an unsplit block counts whole (block->size)
        if self.config.max_split_size is not None and block.size >= self.config.max_split_size:
            _change(detail.oversize["oversize_allocations"], 1)
        return block

    def free(self, block: Block) -> None:
        """Return a block to its pool, merging it with free neighbours."""
        if not block.allocated:
            return
        block.allocated = False
        detail, small, size = self._detail, block.small, block.size
        detail.freed(small, size, block.requested)
        if self.config.max_split_size is not None and size >= self.config.max_split_size:
            _change(detail.oversize["oversize_allocations"], -1)
        merged = self._merge_free_neighbours(block)
        if merged.segment not in self._expandable:
            # Merged-away free neighbours stop being inactive splits; the result is one if still split.
            absorbed = merged.size - size
            split = not merged.whole_segment
            detail.split(small, int(split) - self._merged_count, (merged.size if split else 0) - absorbed)
        self._insert_free(merged)

    def empty_cache(self) -> None:
        """`torch.cuda.empty_cache` (release_cached_blocks): release every segment that holds no allocated
        block, and unmap the whole free pages of expandable segments."""
        self._detail.num_sync_all_streams += 1
        for segment, head in list(self._segment_heads.items()):
            if head.whole_segment and not head.allocated:
                self._remove_free(head)
                self._release(head)
        for key in list(self._free):
            for _, addr in list(self._free.get(key, ())):
                block = self._blocks[addr]
                if block.segment in self._expandable:
                    self._unmap(block)

    def reset_peak(self) -> None:
        """`torch.cuda.reset_peak_memory_stats`: peaks restart from the current values."""
        self._detail.reset_peak()

    def reset_accumulated(self) -> None:
        """`torch.cuda.reset_accumulated_memory_stats`: the allocated / freed totals and event counts restart."""
        self._detail.reset_accumulated()
        for name in ("num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free"):
            setattr(self.stats, name, 0)

    def memory_stats(self) -> dict:
        """`torch.cuda.memory_stats_as_nested_dict()`: the figures PyTorch's allocator reports, by pool."""
        s, detail = self.stats, self._detail
        nested = {
            "num_alloc_retries": s.num_alloc_retries,
            "num_ooms": s.num_ooms,
            "num_sync_all_streams": detail.num_sync_all_streams,
            "num_device_alloc": s.num_device_alloc,
            "num_device_free": s.num_device_free,
            "max_split_size": -1 if self.config.max_split_size is None else self.config.max_split_size,
        }
        by_name = detail.by_name()
        for name in POOL_STATS:
            nested[name] = {pool: dict(zip(METRICS, stat)) for pool, stat in zip(POOLS, by_name[name])}
        for name, stat in detail.oversize.items():
            nested[name] = dict(zip(METRICS, stat))
        return nested

    def flat_memory_stats(self) -> dict[str, int]:
        """`torch.cuda.memory_stats()`: `memory_stats` flattened as PyTorch flattens it
        ("allocated_bytes.all.peak", "num_alloc_retries", ...), sorted by name."""
        flat: dict[str, int] = {}

        def walk(prefix: str, node) -> None:
            if isinstance(node, dict):
                for key, value in node.items():
                    walk(f"{prefix}.{key}" if prefix else key, value)
            else:
                flat[prefix] = node

        walk("", self.memory_stats())
        return dict(sorted(flat.items()))

    # -- finding and making blocks ---------------------------------------------------------------

    def _get_free_block(self, size: int, small: bool, stream: int) -> Block | None:
        config = self.config
        if self._gc_enabled():
            self._gc_clock[small] += 1
        free = self._free.get((small, stream))
        if not free:
            return None
        i = bisect.bisect_left(free, (size, -1))
        if i == len(free):
            return None
        block = self._blocks[free[i][1]]
        if block.segment in self._expandable:
            if config.expandable_segments:
                # A free block bordering unmapped pages can grow; take a larger one that cannot first.
                while (block.segment in self._expandable and i + 1 < len(free)
                       and self._expandable_size(self._blocks[free[i + 1][1]]) < self._expandable_size(block)):
                    i += 1
                    block = self._blocks[free[i][1]]
            else:
                while block.segment in self._expandable:
                    i += 1
                    if i == len(free):
                        return None
                    block = self._blocks[free[i][1]]
        split_limit = config.max_split_size
        if split_limit is not None:
            if size < split_limit <= block.size:
                return None
            if size >= split_limit and block.size >= size + config.max_non_split_rounding:
                return None
        free.pop(i)
        return block

    def _expandable_size(self, block: Block) -> int:
        following = block.next
        return block.size + (following.size if following is not None and not following.mapped else 0)

    def _should_split(self, block: Block, size: int) -> bool:
        remaining = block.size - size
        if block.small or self.config.expandable_segments:
            return remaining >= MIN_BLOCK_BYTES
        split_limit = self.config.max_split_size
        return (split_limit is None or size < split_limit) and remaining > SMALL_SIZE_BYTES

    def _alloc_new(self, size: int, small: bool, stream: int, requested: int) -> Block:
        """No cached block fits: collect garbage, map or cudaMalloc, then release caches and retry."""
        if self._gc_enabled():
            self._collect_garbage()
        block = self._alloc_block(size, small, stream)
        if block is None and self.config.max_split_size is not None and self._release_available(size, small, stream):
            block = self._alloc_block(size, small, stream)
        if block is None:
            self.stats.num_alloc_retries += 1
            self.empty_cache()
            block = self._alloc_block(size, small, stream)
        if block is None:
            self.stats.num_ooms += 1
            raise EmulatedOutOfMemory(self._oom_message(requested), requested)
        return block

    def _alloc_block(self, size: int, small: bool, stream: int) -> Block | None:
        seg_bytes = segment_size(size)
        if self.limit_bytes is not None and self.stats.reserved_bytes + seg_bytes > self.limit_bytes:
            return None
        if self.config.expandable_segments:
            return self._alloc_expandable(size, small, stream)
        if self.stats.reserved_bytes + seg_bytes > self.capacity_bytes:
            return None
        block = Block(self._address_for(seg_bytes), seg_bytes, stream, small, self._next_segment)
        self._segment_heads[self._next_segment] = block
        self._next_segment += 1
        self._blocks[block.addr] = block
        self._detail.change("segment", small, 1)
        if self.config.max_split_size is not None and seg_bytes >= self.config.max_split_size:
            _change(self._detail.oversize["oversize_segments"], 1)
        self._add_reserved(seg_bytes, small)
        return block

    def _add_reserved(self, nbytes: int, small: bool) -> None:
        self._detail.change("reserved_bytes", small, nbytes)
        self.stats.num_device_alloc += 1

    def _address_for(self, nbytes: int) -> int:
        """A device address for a new segment: below every earlier one, as the CUDA driver hands them out
        (the replayed GPU's best-fit ties among equal free blocks follow this order)."""
        self._next_addr -= nbytes
        return self._next_addr

    def _release(self, block: Block) -> None:
        """cudaFree of a whole cached segment (already out of the free lists)."""
        del self._blocks[block.addr]
        del self._segment_heads[block.segment]
        self.stats.num_device_free += 1
        self._detail.change("segment", block.small, -1)
        self._detail.change("reserved_bytes", block.small, -block.size)
        if self.config.max_split_size is not None and block.size >= self.config.max_split_size:
            _change(self._detail.oversize["oversize_segments"], -1)

    def _release_available(self, size: int, small: bool, stream: int) -> bool:
        """release_available_cached_blocks: free cached oversize segments, one that covers the request or
        several from the largest down; True when they add up to the request."""
        split_limit = self.config.max_split_size
        key = max(size, split_limit)
        free = self._free.get((small, stream), [])
        i = bisect.bisect_left(free, (key, -1))
        if i < len(free):
            block = self._blocks[free[i][1]]
            if block.segment not in self._expandable and block.whole_segment:
                free.pop(i)
                self._release(block)
                return True
        released = 0
        for j in range(i - 1, -1, -1):
            if released >= key:
                break
            block = self._blocks[free[j][1]]
            if block.size < split_limit:
                break
            if block.segment not in self._expandable and block.whole_segment:
                free.pop(j)
                self._release(block)
                released += block.size
        return released >= key

    # -- expandable segments ---------------------------------------------------------------------

    def _alloc_expandable(self, size: int, small: bool, stream: int) -> Block | None:
        """try_allocate_expandable_block: map pages at the lowest address where free and unmapped space fit."""
        block = self._find_expandable(size, small, stream)
        if not block.mapped:
            block = self._map(block, min(block.size, size))
            if block is None:
                return None
        while block.size < size:
            grown = self._map(block.next, min(size - block.size, block.next.size))
            if grown is None:
                return None
            block = grown
        self._remove_free(block)
        return block

    def _find_expandable(self, size: int, small: bool, stream: int) -> Block:
        for addr in self._unmapped.get((small, stream), ()):
            unmapped = self._blocks[addr]
            before = unmapped.prev
            start = before if before is not None and not before.allocated else unmapped
            total, block = 0, start
            while block is not None and not block.allocated and total < size:
                total += block.size
                block = block.next
            if total >= size:
                return start
        page = SMALL_BUFFER_BYTES if small else LARGE_BUFFER_BYTES
        span = -(-int(self.capacity_bytes * EXPANDABLE_ADDRESS_FACTOR) // page) * page
        block = Block(self._next_reserve, span, stream, small, self._next_segment, mapped=False)
        self._expandable[self._next_segment] = _Expandable(self._next_reserve, page)
        self._next_reserve += span
        self._next_segment += 1
        self._blocks[block.addr] = block
        bisect.insort(self._unmapped.setdefault((small, stream), []), block.addr)
        return block

    def _map(self, unmapped: Block, nbytes: int) -> Block | None:
        """Map whole pages for `nbytes` at the start of an unmapped block; returns the free block they join."""
        page = self._expandable[unmapped.segment].page
        mapped = -(-nbytes // page) * page
        if self.stats.reserved_bytes + mapped > self.capacity_bytes:
            return None
        self._unmapped[(unmapped.small, unmapped.stream)].remove(unmapped.addr)
        if mapped < unmapped.size:
            rest = self._split_off(unmapped, mapped)
            bisect.insort(self._unmapped[(rest.small, rest.stream)], rest.addr)
        unmapped.mapped = True
        self._add_reserved(mapped, unmapped.small)
        block = self._merge_free_neighbours(unmapped)
        self._insert_free(block)
        return block

    def _unmap(self, block: Block) -> None:
        """unmap_block: give back the whole pages inside a free block of an expandable segment."""
        segment = self._expandable[block.segment]
        page = segment.page
        offset = block.addr - segment.base
        first = -(-offset // page) * page
        last = (offset + block.size) // page * page
        if first >= last:
            return
        self._remove_free(block)
        pieces = []
        if first > offset:
            pieces.append((block.addr, first - offset, True))
        pieces.append((segment.base + first, last - first, False))
        if offset + block.size > last:
            pieces.append((segment.base + last, offset + block.size - last, True))
        prev, following = block.prev, block.next
        del self._blocks[block.addr]
        made = []
        for addr, nbytes, mapped in pieces:
            piece = Block(addr, nbytes, block.stream, block.small, block.segment, mapped=mapped)
            piece.prev = made[-1] if made else prev
            if made:
                made[-1].next = piece
            made.append(piece)
            self._blocks[addr] = piece
        made[0].prev = prev
        if prev is not None:
            prev.next = made[0]
        made[-1].next = following
        if following is not None:
            following.prev = made[-1]
        self.stats.num_device_free += 1
        self._detail.change("reserved_bytes", block.small, first - last)
        key = (block.small, block.stream)
        for piece in made:
            if piece.mapped:
                self._insert_free(piece)
            else:
                merged = self._merge_unmapped_neighbours(piece)
                if merged.whole_segment:  # nothing of the segment is mapped: release its addresses
                    del self._blocks[merged.addr]
                    del self._expandable[merged.segment]
                else:
                    bisect.insort(self._unmapped.setdefault(key, []), merged.addr)

    def _merge_unmapped_neighbours(self, block: Block) -> Block:
        for neighbour in (block.prev, block.next):
            if neighbour is not None and not neighbour.mapped:
                self._unmapped[(neighbour.small, neighbour.stream)].remove(neighbour.addr)
                self._merge(block, neighbour)
        return block

    # -- garbage collection ----------------------------------------------------------------------

    def _gc_enabled(self) -> bool:
        return self.limit_bytes is not None and self.config.garbage_collection_threshold > 0

    def _collect_garbage(self) -> None:
        """garbage_collect_cached_blocks: release whole free large-pool segments unused for at least the
        average age (get_free_block calls on the pool since they were freed) until reserved memory is back
        under the threshold."""
        threshold = int(self.config.garbage_collection_threshold * self.limit_bytes)
        if self.stats.reserved_bytes <= threshold:
            return
        target = self.stats.reserved_bytes - threshold
        clock = self._gc_clock[False]

        def candidates() -> list[Block]:
            return [self._blocks[addr] for (small, _), free in sorted(self._free.items()) if not small
                    for _, addr in free
                    if self._blocks[addr].whole_segment and self._blocks[addr].segment not in self._expandable]

        blocks = candidates()
        total_age, count = sum(clock - b.gc_base for b in blocks), len(blocks)
        reclaimed, freed = 0, True
        while reclaimed < target and freed and count:
            average = total_age / count
            freed = False
            for block in candidates():
                age = clock - block.gc_base
                if age >= average:
                    self._remove_free(block)
                    self._release(block)
                    reclaimed += block.size
                    total_age -= age
                    count -= 1
                    freed = True

    # -- block lists -----------------------------------------------------------------------------

    def _split_off(self, block: Block, size: int) -> Block:
        """Cut `block` to its first `size` bytes; the rest becomes the next block (same segment, same
        mapped state), registered but in no free or unmapped list yet."""
        rest = Block(block.addr + size, block.size - size, block.stream, block.small, block.segment,
                     mapped=block.mapped)
        rest.prev, rest.next = block, block.next
        if block.next is not None:
            block.next.prev = rest
        block.next = rest
        block.size = size
        self._blocks[rest.addr] = rest
        return rest

    def _merge_free_neighbours(self, block: Block) -> Block:
        """Merge `block` with its free mapped neighbours; `_merged_count` says how many it took in."""
        self._merged_count = 0
        for neighbour in (block.prev, block.next):
            if neighbour is not None and not neighbour.allocated and neighbour.mapped:
                self._remove_free(neighbour)
                self._merge(block, neighbour)
                self._merged_count += 1
        return block

    def _merge(self, block: Block, other: Block) -> None:
        # Keep `block` as the survivor; it takes over the lower address if `other` precedes it.
        del self._blocks[other.addr]
        if other is block.prev:
            del self._blocks[block.addr]
            block.addr = other.addr
            block.prev = other.prev
            if other.prev is not None:
                other.prev.next = block
            self._blocks[block.addr] = block
            if self._segment_heads.get(block.segment) is other:
                self._segment_heads[block.segment] = block
        else:
            block.next = other.next
            if other.next is not None:
                other.next.prev = block
        block.size += other.size

    def _insert_free(self, block: Block) -> None:
        block.gc_base = self._gc_clock[block.small]
        bisect.insort(self._free.setdefault((block.small, block.stream), []), (block.size, block.addr))

    def _remove_free(self, block: Block) -> None:
        free = self._free[(block.small, block.stream)]
        free.pop(bisect.bisect_left(free, (block.size, block.addr)))

    def _oom_message(self, requested: int) -> str:
        gib = 1 << 30
        s = self.stats
        cap = self.capacity_bytes if self.limit_bytes is None else min(self.capacity_bytes, self.limit_bytes)
        free = max(cap - s.reserved_bytes, 0)
        return (
            f"CUDA out of memory (emulated by Maya). Tried to allocate {requested / gib:.2f} GiB. "
            f"{self.device_name} has a total capacity of {cap / gib:.2f} GiB of which "
            f"{free / gib:.2f} GiB is free. Of the allocated memory {s.allocated_bytes / gib:.2f} GiB "
            f"is allocated by PyTorch, and {(s.reserved_bytes - s.allocated_bytes) / gib:.2f} GiB "
            "is reserved by PyTorch but unallocated."
            + ("" if self.config.expandable_segments else
               " If reserved but unallocated memory is large try setting "
               "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation (Maya emulates it).")
        )
