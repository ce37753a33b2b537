"""The kinds of events the emulator records and the training phases it tells apart."""

from __future__ import annotations

import enum


class EventKind(str, enum.Enum):
    """What a trace row records."""

    KERNEL = "kernel"
    """A GPU operation: one aten op (or fused op) that runs on a CUDA stream."""
    MEMCPY = "memcpy"
    """A copy between host and device (attrs: src, dst, non_blocking, pinned)."""
    COLLECTIVE = "collective"
    """An NCCL collective or point-to-point call (group columns are filled)."""
    SYNC = "sync"
    """The host blocks until GPU work finishes: item(), D2H copy, synchronize, event.synchronize."""
    EVENT_RECORD = "event_record"
    """`event.record(stream)`: `event_id` is recorded on `stream`."""
    STREAM_WAIT = "stream_wait"
    """`stream.wait_event(event)`: `stream` waits for `event_id`."""
    ITERATION_END = "iteration_end"
    """The end of an iteration (`optimizer.step()` returned, or `maya.mark_iteration()`)."""
    HOST = "host"
    """Host-only framework work whose CPU cost is calibrated by category, named by `op`
    (`torch:checkpoint`: one activation-checkpoint region's forward; `torch:checkpoint_recompute`: its
    recomputation in backward)."""


class Phase(str, enum.Enum):
    """Which part of a training step an event belongs to."""

    FORWARD = "forward"
    BACKWARD = "backward"
    OPTIMIZER = "optimizer"
    OTHER = "other"
