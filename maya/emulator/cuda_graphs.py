"""CUDA graphs under emulation: a capture records the GPU work once, each replay issues it again.

On a GPU, `torch.cuda.graph(g)` (or `g.capture_begin()` ... `g.capture_end()`) records the kernels,
copies and NCCL calls the host launches into `g` without running them, and `g.replay()` then runs the
whole recording with one launch: the GPU does the same work as eagerly, but the host no longer pays
each op's Python and dispatcher time. torchtitan captures its forward and backward this way by default
(since 2026), PyTorch's documentation captures whole training steps, and `make_graphed_callables`
captures a module's forward and backward.

Maya runs the captured region as it runs any code (every op runs on fake tensors, so shapes, the
allocator and the module tracker see it), then moves its GPU rows out of the trace into the graph:
- the capture itself costs no GPU time (nothing runs), and its host time (the launches, once) is
  left out of the trace;
- each `replay()` appends the graph's kernel, copy, NCCL and stream-event rows again in the current
  iteration, marked `graph_replay` (`maya.emulator.attrs.GRAPH_REPLAY`): the host model charges them
  nothing and charges one `cuda:graph_replay` host row one kernel launch (`aten_op_us`; the cost of
  `cudaGraphLaunch` has not been measured on the GPU machines). Events recorded inside the graph get
  new ids at every replay and NCCL calls the next sequence numbers of their groups (the capture's
  calls, which no GPU ran, are not counted), as every rank replays the same calls;
  the capture stream's rows run on the stream that replays the graph;
- an optimizer step captured inside the graph (a whole training step captured) ends an iteration at
  each replay, not at the capture.

A host synchronization inside a capture (`.item()`, `torch.cuda.synchronize()`, a device-to-host
copy) fails as CUDA fails it ("operation not permitted when stream is capturing"). Memory: the
capture allocates from the emulated caching allocator, so the peaks are the capture's, as
`torch.cuda.max_memory_allocated()` reports them on a GPU; replays allocate nothing. The graph's
private memory pool is not kept apart from the rest of the cache, so blocks the capture freed may
serve later allocations outside the graph, which a GPU's private pool would not allow (reserved
memory can be predicted lower than a GPU's). `pool` handles are accepted and shared pools are not
modelled apart either.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass

from maya.emulator import state as st
from maya.emulator.attrs import GRAPH_REPLAY
from maya.emulator.events import EventKind
from maya.emulator.patcher import Patcher

_FIELD = {name: i for i, name in enumerate(st.ROW_FIELDS)}
_REPLAYED = frozenset({EventKind.KERNEL.value, EventKind.MEMCPY.value, EventKind.COLLECTIVE.value,
                       EventKind.EVENT_RECORD.value, EventKind.STREAM_WAIT.value, EventKind.ITERATION_END.value})
"""Row kinds a replay issues again: the GPU's work and its stream order, and a captured step's end.
Host-only rows (`EventKind.HOST`: checkpoint regions, FSDP2 hooks, DTensor dispatch) ran once, at the
capture."""
_LAUNCHES = frozenset({EventKind.KERNEL.value, EventKind.MEMCPY.value, EventKind.COLLECTIVE.value})
_pool_ids = itertools.count(1)


class GraphCaptureError(RuntimeError):
    """What CUDA refuses during a stream capture, or a graph used out of order."""


@dataclass(frozen=True, slots=True)
class _Start:
    """The emulation's counters when a capture began."""

    rows: int
    iteration: int
    iterations: int
    iteration_ends: int
    stream: int
    group_seq: dict


class EmulatedCUDAGraph:
    """`torch.cuda.CUDAGraph` under emulation (see the module docstring)."""

    def __init__(self, keep_graph: bool = False) -> None:
        self._start: _Start | None = None
        self._rows: list[tuple] | None = None
        self._ends: list = []
        self._pending: dict[int, int] = {}
        self._pool = (0, next(_pool_ids))

    def capture_begin(self, pool=None, capture_error_mode: str = "global", **_: object) -> None:
        state = st.active()
        if state.capture is not None:
            raise GraphCaptureError("CUDA graph capture_begin: another capture is already underway in this process")
        if self._rows is not None:
            raise GraphCaptureError("This CUDAGraph instance already owns a captured graph. To capture a new graph, "
                                    "create a new instance.")
        if pool is not None:
            self._pool = tuple(pool)
        self._start = _Start(rows=len(state.rows), iteration=state.iteration, iterations=len(state.iterations),
                             iteration_ends=len(state.iteration_ends), stream=state.current_stream,
                             group_seq=dict(state.nccl.group_seq))
        state.capture = self

    def capture_end(self) -> None:
        state = st.active()
        if state.capture is not self or self._start is None:
            raise GraphCaptureError("CUDA graph capture_end without a capture_begin on this graph")
        state.capture = None
        start = self._start
        kind = _FIELD["kind"]
        self._rows = [_marked(row) for row in state.rows[start.rows:] if row[kind] in _REPLAYED]
        del state.rows[start.rows:]
        state.nccl.group_seq = start.group_seq  # the captured NCCL calls are numbered at each replay
        # Storages a captured NCCL call writes and nothing in the graph waited for: after each replay
        # they wait for that replay's call.
        recorded = {row[_FIELD["event_id"]] for row in self._rows if row[kind] == EventKind.EVENT_RECORD.value}
        pending = state.nccl.pending
        self._pending = {key: event for key, event in pending.items() if event in recorded}
        for key in self._pending:
            del pending[key]
        # An optimizer step inside the capture ended iterations that no GPU work filled: they end at
        # each replay instead. The capture's memory peaks stay with the iteration it ran in.
        self._ends = state.iteration_ends[start.iteration_ends:]
        if self._ends:
            removed = state.iterations[start.iterations:]
            del state.iterations[start.iterations:]
            del state.iteration_ends[start.iteration_ends:]
            state.iteration = start.iteration
            kept = state.iterations[-1]
            for it in removed:
                kept.peak_allocated_bytes = max(kept.peak_allocated_bytes, it.peak_allocated_bytes)
                kept.peak_reserved_bytes = max(kept.peak_reserved_bytes, it.peak_reserved_bytes)

    def instantiate(self) -> None:
        if self._rows is None:
            raise GraphCaptureError("CUDA graph instantiate before its capture ended")

    def replay(self) -> None:
        state = st.active()
        if self._rows is None:
            raise GraphCaptureError("CUDA graph replay before its capture ended (capture it with torch.cuda.graph)")
        if state.capture is not None:
            raise GraphCaptureError("CUDA graph replay inside another graph's capture is not emulated")
        f = _FIELD
        launches = sum(row[f["kind"]] in _LAUNCHES for row in self._rows)
        state.add_row(EventKind.HOST, "cuda:graph_replay", attrs={"ops": launches})
        events: dict[int, int] = {}
        ends = iter(self._ends)
        stats = state.allocator.stats
        for row in self._rows:
            kind = row[f["kind"]]
            if kind == EventKind.ITERATION_END.value:
                owner = next(ends)
                state.end_iteration()
                state.iteration_ends[-1] = owner
                continue
            new = list(row)
            new[f["seq"]], new[f["iteration"]] = len(state.rows), state.iteration
            if new[f["stream"]] == self._start.stream:
                new[f["stream"]] = state.current_stream
            event = row[f["event_id"]]
            if kind == EventKind.EVENT_RECORD.value:
                events[event] = new[f["event_id"]] = state.next_event_id
                state.next_event_id += 1
            elif event in events:
                new[f["event_id"]] = events[event]
            collective = row[f["collective"]]
            if collective is not None:
                group, ranks, _, message, reduce_op, peer, async_op = collective
                seq = state.nccl.next_seq(row[f["op"]].removeprefix("nccl:"), group, peer)
                new[f["collective"]] = (group, ranks, seq, message, reduce_op, peer, async_op)
            new[f["allocated_bytes"]], new[f["reserved_bytes"]] = stats.allocated_bytes, stats.reserved_bytes
            state.rows.append(tuple(new))
        state.nccl.pending.update({key: events[event] for key, event in self._pending.items()})

    def reset(self) -> None:
        self._rows, self._ends = None, []

    def pool(self) -> tuple[int, int]:
        return self._pool

    def enable_debug_mode(self) -> None:
        pass

    def debug_dump(self, debug_path: str) -> None:
        raise GraphCaptureError("CUDAGraph.debug_dump cannot be emulated: no cudaGraph_t exists on the emulated GPU")

    def raw_cuda_graph(self) -> None:
        raise GraphCaptureError("CUDAGraph.raw_cuda_graph cannot be emulated: no cudaGraph_t exists on the emulated GPU")

    raw_cuda_graph_exec = raw_cuda_graph


def _marked(row: tuple) -> tuple:
    """`row` with `GRAPH_REPLAY` in its attrs, as every replay issues it (marked once, at the capture)."""
    at = _FIELD["attrs"]
    attrs = json.loads(row[at]) if row[at] else {}
    attrs[GRAPH_REPLAY] = True
    return (*row[:at], json.dumps(attrs), *row[at + 1:])


def graph_pool_handle() -> tuple[int, int]:
    """`torch.cuda.graph_pool_handle()`: a token naming a memory pool that graphs may share."""
    return (0, next(_pool_ids))


def is_current_stream_capturing() -> bool:
    """True between a graph's `capture_begin` and `capture_end` (SyncBatchNorm and others ask)."""
    return st.active().capture is not None


def check_not_capturing(what: str) -> None:
    """Fail as CUDA does when the host synchronizes with a capturing stream."""
    if st.active().capture is not None:  # the capture stays open: torch.cuda.graph's exit ends it
        raise GraphCaptureError(
            f"CUDA error: operation not permitted when stream is capturing ({what} inside a CUDA graph capture: "
            "a captured region must not synchronize the host with the GPU)"
        )


def install_cuda_graphs(patcher: Patcher) -> None:
    """Point torch.cuda's graph API at the emulated graph."""
    import torch

    cuda, graphs = torch.cuda, torch.cuda.graphs
    for owner in (cuda, graphs):
        patcher.set(owner, "CUDAGraph", EmulatedCUDAGraph)
        patcher.set(owner, "graph_pool_handle", graph_pool_handle)
        patcher.set(owner, "is_current_stream_capturing", is_current_stream_capturing)
    # torch.cuda.graph's __enter__ empties the pinned host cache, which a CPU build of torch lacks.
    patcher.set(torch._C, "_host_emptyCache", lambda: None)
