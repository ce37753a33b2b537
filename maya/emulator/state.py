"""`EmulationState`: everything one emulated rank accumulates while its script runs.

There is one active state per process (`active()`); the fake torch.cuda API, the recorder, the
allocator hooks and the module tracker all write into it.
"""

from __future__ import annotations

import json
import weakref
from dataclasses import dataclass, field

from maya.emulator import allocator_config
from maya.emulator.allocator import Block, CachingAllocator
from maya.emulator.events import EventKind, Phase
from maya.emulator.object_mailbox import ObjectMailbox
from maya.hardware import GpuSpec

CUBLAS_WORKSPACE_BYTES_SM90 = 32 << 20
"""cuBLAS workspace per stream on compute capability 9.0 (`4096 * 8 KiB`, PyTorch's default for
Hopper in aten/src/ATen/cuda/CublasHandlePool.cpp); it comes from the caching allocator and stays."""
CUBLAS_WORKSPACE_BYTES_OTHER = 4096 * 1024 * 2 + 16 * 1024 * 8
"""The same default for other architectures (`:4096:2:16:8`)."""
CUDA_CONTEXT_BYTES = 552_402_944
"""Device memory the CUDA context takes before the allocator can use any: total minus
`torch.cuda.mem_get_info()` free at start on the project's H200 (maya/estimator/data/h200/env.json)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RankConfig:
    """Who this process is in the emulated world."""

    gpu: GpuSpec
    """The GPU being emulated."""
    rank: int = 0
    """Global rank (torchrun's RANK)."""
    world_size: int = 1
    """Number of ranks (torchrun's WORLD_SIZE)."""
    local_rank: int = 0
    """Rank within the node (torchrun's LOCAL_RANK); the default CUDA device index."""
    local_world_size: int = 1
    """Ranks per node; what `torch.cuda.device_count()` answers."""

    def __post_init__(self) -> None:
        if not 0 <= self.rank < self.world_size:
            raise ValueError(f"rank={self.rank} must be in [0, world_size={self.world_size})")
        if not 0 <= self.local_rank < self.local_world_size:
            raise ValueError(f"local_rank={self.local_rank} must be in [0, local_world_size={self.local_world_size})")


@dataclass(slots=True)
class IterationStats:
    """Per-iteration figures the summary reports."""

    index: int
    peak_allocated_bytes: int = 0
    peak_reserved_bytes: int = 0


@dataclass(eq=False, slots=True)
class EmulationState:
    """Mutable record of one rank's emulation."""

    config: RankConfig
    allocator: CachingAllocator = field(init=False)
    rows: list[tuple] = field(default_factory=list)
    """One tuple per trace row, in the column order of `ROW_FIELDS`."""
    iteration: int = 0
    iterations: list[IterationStats] = field(default_factory=list)
    iteration_ends: list[tuple[int, str] | None] = field(default_factory=list)
    """Who closed each iteration, in order: the (id, class name) of the optimizer whose `step()` did,
    or None for `maya.mark_iteration()` (`maya.emulator.iteration_cycles` reads them)."""
    current_stream: int = 0
    next_stream_id: int = 1
    next_event_id: int = 0
    in_optimizer: int = 0
    oom: bool = False
    live_storages: dict[int, tuple[Block, weakref.ref]] = field(default_factory=dict)
    workspace_streams: set[tuple[int, bool]] = field(default_factory=set)
    """(stream, on the autograd thread) pairs that already hold a cuBLAS workspace."""
    streams: dict[int, object] = field(default_factory=dict)
    """Stream objects handed out for ids (current_stream/default_stream return the same object)."""
    dispatched_ops: int = 0
    nccl: object = None
    """The rank's `NcclRuntime` (streams, sequence numbers, pending calls), set by the session."""
    values: object = None
    """The recorder's `ValueHints`: collectives, which write their outputs without an aten op, tell
    it (`ValueHints.written`)."""
    deferred_error: BaseException | None = None
    """The first out-of-memory error or tensor hook's exception raised inside a backward pass, re-raised
    when backward returns (`maya.emulator.out_of_memory`)."""
    allocator_settings: list[str] = field(default_factory=list)
    """What the script gave `torch.cuda.memory._set_allocator_settings` (the run's
    PYTORCH_CUDA_ALLOC_CONF is read apart), for the warning on settings the emulated allocator does not follow."""
    elapsed_time_ms: object = None
    """Callable(rows, first_row, last_row, stream) -> predicted ms between two event records, set by
    the caller (maya.event_timing); None: `Event.elapsed_time` answers 0.0."""
    capture: object = None
    compiled_calls: int = 0
    """How deep the script is in calls of functions and modules that `torch.compile` wrapped (compiled
    FlexAttention is one fused kernel: `maya.emulator.flex_attention`)."""
    """The `maya.emulator.cuda_graphs.EmulatedCUDAGraph` whose capture is underway, or None."""
    groups: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)
    """Every process group the script created, member or not: (group name, global ranks)."""
    settle_autograd: object = None
    """Callable() that returns once the autograd engine's device thread has let go of the last backward
    pass (`maya.emulator.out_of_memory`), set by the session."""
    mailbox: ObjectMailbox = field(default_factory=ObjectMailbox)
    """Objects sent to this rank by other ranks' emulations, and those it sends (`send_object_list`)."""
    """aten ops that reached the recorder (views and CPU ops included): the emulation-speed unit."""

    def __post_init__(self) -> None:
        gpu = self.config.gpu
        self.allocator = CachingAllocator(
            gpu.total_memory_bytes - CUDA_CONTEXT_BYTES, f"GPU {self.config.local_rank}",
            config=lambda: allocator_config.from_environment()[0], device_total_bytes=gpu.total_memory_bytes)
        self.iterations.append(IterationStats(index=0))

    @property
    def cublas_workspace_bytes(self) -> int:
        return CUBLAS_WORKSPACE_BYTES_SM90 if self.config.gpu.compute_capability == (9, 0) else CUBLAS_WORKSPACE_BYTES_OTHER

    def note_memory(self) -> None:
        """Fold the allocator's current totals into this iteration's peaks."""
        it = self.iterations[-1]
        s = self.allocator.stats
        if s.allocated_bytes > it.peak_allocated_bytes:
            it.peak_allocated_bytes = s.allocated_bytes
        if s.reserved_bytes > it.peak_reserved_bytes:
            it.peak_reserved_bytes = s.reserved_bytes

    def add_row(
        self,
        kind: EventKind,
        op: str,
        *,
        phase: Phase = Phase.OTHER,
        module: str = "",
        stream: int | None = None,
        event_id: int = -1,
        inputs: tuple = (),
        outputs: tuple = (),
        attrs: dict | None = None,
        collective: tuple | None = None,
        allow_tf32: bool | None = None,
    ) -> None:
        """Append one trace row; `inputs`/`outputs` are tuples of (shape, dtype, stride)."""
        if self.capture is not None and kind is EventKind.SYNC:
            from maya.emulator.cuda_graphs import check_not_capturing

            check_not_capturing(op)
        s = self.allocator.stats
        self.rows.append(
            (
                len(self.rows),
                self.iteration,
                kind.value,
                op,
                phase.value,
                module,
                self.current_stream if stream is None else stream,
                event_id,
                inputs,
                outputs,
                json.dumps(attrs) if attrs is not None else None,
                s.allocated_bytes,
                s.reserved_bytes,
                collective,
                allow_tf32,
            )
        )

    def end_iteration(self, optimizer: object | None = None) -> None:
        """Close the current iteration (after `optimizer.step()`, or `maya.mark_iteration()` without one)."""
        self.add_row(EventKind.ITERATION_END, "maya:iteration_end")
        self.iteration_ends.append(None if optimizer is None else (id(optimizer), type(optimizer).__name__))
        self.iteration += 1
        s = self.allocator.stats
        self.iterations.append(
            IterationStats(index=self.iteration, peak_allocated_bytes=s.allocated_bytes, peak_reserved_bytes=s.reserved_bytes)
        )


ROW_FIELDS = (
    "seq", "iteration", "kind", "op", "phase", "module", "stream", "event_id",
    "inputs", "outputs", "attrs", "allocated_bytes", "reserved_bytes", "collective", "allow_tf32",
)
"""Order of the values in each `EmulationState.rows` tuple."""

_active: list[EmulationState] = []


def active() -> EmulationState:
    """The state of the emulation running in this process."""
    if not _active:
        raise RuntimeError("no Maya emulation is active in this process")
    return _active[-1]


def is_active() -> bool:
    """Whether an emulation is running in this process."""
    return bool(_active)


def push(state: EmulationState) -> None:
    _active.append(state)


def pop() -> None:
    _active.pop()
