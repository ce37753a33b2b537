"""`CachingAllocator`: an emulation of PyTorch's CUDA caching allocator.

It reproduces the rules that decide `memory_allocated` / `memory_reserved` and when an
allocation runs out of memory (c10/cuda/CUDACachingAllocator.cpp, PyTorch 2.x, default config):
- request sizes round up to a multiple of 512 bytes (kMinBlockSize);
- requests of at most 1 MiB (kSmallSize) use the small pool, whose segments are 2 MiB (kSmallBuffer);
- larger requests use the large pool: a request under 10 MiB (kMinLargeAlloc) gets a 20 MiB segment
  (kLargeBuffer); a larger one gets a segment rounded up to 2 MiB (kRoundLarge);
- a free block is found best-fit (smallest that fits) within the same pool *and stream*;
- a block is split when the remainder is at least 512 bytes (small pool) or more than 1 MiB (large);
- a freed block merges with free neighbours of the same segment;
- when a new segment would exceed device memory, every fully free cached segment is released
  (as `cudaFree`) and the allocation retried once before raising OutOfMemoryError.
Sizes are bytes throughout.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

MIN_BLOCK_BYTES = 512
SMALL_SIZE_BYTES = 1 << 20
SMALL_BUFFER_BYTES = 2 << 20
LARGE_BUFFER_BYTES = 20 << 20
MIN_LARGE_ALLOC_BYTES = 10 << 20
ROUND_LARGE_BYTES = 2 << 20


def round_size(size_bytes: int) -> int:
    """Bytes the allocator actually hands out for a request of `size_bytes`."""
    if size_bytes < MIN_BLOCK_BYTES:
        return MIN_BLOCK_BYTES
    return -(-size_bytes // MIN_BLOCK_BYTES) * MIN_BLOCK_BYTES


def segment_size(rounded_bytes: int) -> int:
    """Bytes of a new segment (one cudaMalloc) for a rounded request."""
    if rounded_bytes <= SMALL_SIZE_BYTES:
        return SMALL_BUFFER_BYTES
    if rounded_bytes < MIN_LARGE_ALLOC_BYTES:
        return LARGE_BUFFER_BYTES
    return -(-rounded_bytes // ROUND_LARGE_BYTES) * ROUND_LARGE_BYTES


class Block:
    """A contiguous piece of one segment, allocated or free."""

    __slots__ = ("addr", "size", "stream", "small", "segment", "allocated", "prev", "next")

    def __init__(self, addr: int, size: int, stream: int, small: bool, segment: int) -> None:
        self.addr = addr
        self.size = size
        self.stream = stream
        self.small = small
        self.segment = segment
        self.allocated = False
        self.prev: Block | None = None
        self.next: Block | None = None


class EmulatedOutOfMemory(Exception):
    """Raised by `CachingAllocator.malloc`; the emulator turns it into torch.cuda.OutOfMemoryError."""

    def __init__(self, message: str, requested_bytes: int) -> None:
        super().__init__(message)
        self.requested_bytes = requested_bytes


@dataclass(slots=True)
class AllocatorStats:
    """Running totals, named as in `torch.cuda.memory_stats()` (all pools together)."""

    allocated_bytes: int = 0
    peak_allocated_bytes: int = 0
    reserved_bytes: int = 0
    peak_reserved_bytes: int = 0
    active_blocks: int = 0
    segments: int = 0
    num_alloc_retries: int = 0
    num_ooms: int = 0
    num_device_alloc: int = 0
    num_device_free: int = 0


class CachingAllocator:
    """Tracks blocks and segments of one emulated GPU.

    Args:
        capacity_bytes: memory available to the allocator (device memory less the CUDA context).
        device_name: used in out-of-memory messages.
    """

    def __init__(self, capacity_bytes: int, device_name: str = "GPU 0") -> None:
        self.capacity_bytes = capacity_bytes
        self.device_name = device_name
        self.stats = AllocatorStats()
        # (small, stream) -> sorted [(size, addr)] of free blocks; addr -> Block for lookups.
        self._free: dict[tuple[bool, int], list[tuple[int, int]]] = {}
        self._blocks: dict[int, Block] = {}
        self._next_addr = 1 << 40
        self._next_segment = 0
        self._segment_heads: dict[int, Block] = {}

    def malloc(self, size_bytes: int, stream: int = 0) -> Block:
        """Allocate `size_bytes` on `stream`; raises EmulatedOutOfMemory like the real allocator."""
        size = round_size(size_bytes)
        small = size <= SMALL_SIZE_BYTES
        block = self._take_free(size, small, stream)
        if block is None:
            block = self._new_segment(size, small, stream, size_bytes)
        remaining = block.size - size
        if remaining >= MIN_BLOCK_BYTES if small else remaining > SMALL_SIZE_BYTES:
            rest = Block(block.addr + size, remaining, stream, small, block.segment)
            rest.prev, rest.next = block, block.next
            if block.next is not None:
                block.next.prev = rest
            block.next = rest
            block.size = size
            self._blocks[rest.addr] = rest
            self._insert_free(rest)
        block.allocated = True
        stats = self.stats
        # An unsplit block counts whole, as in PyTorch's stats (block->size).
        stats.allocated_bytes += block.size
        stats.active_blocks += 1
        if stats.allocated_bytes > stats.peak_allocated_bytes:
            stats.peak_allocated_bytes = stats.allocated_bytes
        return block

    def free(self, block: Block) -> None:
        """Return a block to its pool, merging it with free neighbours."""
        if not block.allocated:
            return
        block.allocated = False
        self.stats.allocated_bytes -= block.size
        self.stats.active_blocks -= 1
        for neighbour in (block.prev, block.next):
            if neighbour is not None and not neighbour.allocated:
                self._remove_free(neighbour)
                self._merge(block, neighbour)
        self._insert_free(block)

    def empty_cache(self) -> None:
        """Release every segment that holds no allocated block (`torch.cuda.empty_cache`)."""
        for segment, head in list(self._segment_heads.items()):
            if head.prev is None and head.next is None and not head.allocated:
                self._remove_free(head)
                del self._blocks[head.addr]
                del self._segment_heads[segment]
                self.stats.reserved_bytes -= head.size
                self.stats.segments -= 1
                self.stats.num_device_free += 1

    def reset_peak(self) -> None:
        """`torch.cuda.reset_peak_memory_stats`: peaks restart from the current values."""
        self.stats.peak_allocated_bytes = self.stats.allocated_bytes
        self.stats.peak_reserved_bytes = self.stats.reserved_bytes

    def _take_free(self, size: int, small: bool, stream: int) -> Block | None:
        free = self._free.get((small, stream))
        if not free:
            return None
        i = bisect.bisect_left(free, (size, -1))
        if i == len(free):
            return None
        _, addr = free.pop(i)
        return self._blocks[addr]

    def _new_segment(self, size: int, small: bool, stream: int, requested: int) -> Block:
        seg_bytes = segment_size(size)
        if self.stats.reserved_bytes + seg_bytes > self.capacity_bytes:
            self.stats.num_alloc_retries += 1
            self.empty_cache()
            if self.stats.reserved_bytes + seg_bytes > self.capacity_bytes:
                self.stats.num_ooms += 1
                raise EmulatedOutOfMemory(self._oom_message(requested), requested)
        block = Block(self._next_addr, seg_bytes, stream, small, self._next_segment)
        self._next_addr += seg_bytes + ROUND_LARGE_BYTES
        self._segment_heads[self._next_segment] = block
        self._next_segment += 1
        self._blocks[block.addr] = block
        stats = self.stats
        stats.reserved_bytes += seg_bytes
        stats.segments += 1
        stats.num_device_alloc += 1
        if stats.reserved_bytes > stats.peak_reserved_bytes:
            stats.peak_reserved_bytes = stats.reserved_bytes
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
        bisect.insort(self._free.setdefault((block.small, block.stream), []), (block.size, block.addr))

    def _remove_free(self, block: Block) -> None:
        free = self._free[(block.small, block.stream)]
        free.pop(bisect.bisect_left(free, (block.size, block.addr)))

    def _oom_message(self, requested: int) -> str:
        gib = 1 << 30
        s = self.stats
        free = max(self.capacity_bytes - s.reserved_bytes, 0)
        return (
            f"CUDA out of memory (emulated by Maya). Tried to allocate {requested / gib:.2f} GiB. "
            f"{self.device_name} has a total capacity of {self.capacity_bytes / gib:.2f} GiB of which "
            f"{free / gib:.2f} GiB is free. Of the allocated memory {s.allocated_bytes / gib:.2f} GiB "
            f"is allocated by PyTorch, and {(s.reserved_bytes - s.allocated_bytes) / gib:.2f} GiB "
            "is reserved by PyTorch but unallocated."
        )
