"""`RankState`: one rank's host thread, CUDA streams and events during a simulation.

Semantics (times in microseconds):
- The host issues rows in `seq` order and pays `host_us` for each; a row's issue time is the host
  time after paying it.
- Each stream runs its work FIFO: a kernel starts at max(issue time, stream free time). A row with
  `launch_us` (a cuDNN RNN launching kernels for every step) keeps the host busy that long after its
  issue time, while the GPU runs it, and ends no earlier than issue time + `launch_us`.
- `event_record` completes when all earlier work on its stream does; `stream_wait` holds later work
  on its stream until that record completes; a `sync` blocks the host until the GPU work it waits
  for (its stream, every stream for `cuda:synchronize`, or its event) is done.
- A collective holds its stream until the `CollectiveMatcher` has seen every member reach it.

For speed, the common case never touches the heap: while a stream is not blocked, a kernel's start
and end are computed the moment the host issues it. Rows issued behind a blocked item (a collective
still waiting for its peers, or a wait on an event not yet known) queue on that stream and are timed
when it unblocks. The heap only carries collective completions and host wake-ups.
"""

from __future__ import annotations

import math
from collections import deque
from typing import TYPE_CHECKING

from maya.simulator.host_run import HostRun
from maya.simulator.overlap import add_busy_interval, stretched_end_us
from maya.simulator.rank_trace import COLLECTIVE, EVENT_RECORD, KERNEL, MEMCPY, STREAM_WAIT, SYNC, RankTrace

if TYPE_CHECKING:
    from maya.simulator.collective_matcher import CollectiveMatcher


class RankState:
    """Mutable simulation state of one (representative) rank; its timings end up in the lists below."""

    __slots__ = (
        "rank", "trace", "matcher", "slowdown", "host_time_us", "pos", "issue_us", "start_us", "end_us",
        "stream_free", "queues", "gaps", "record_time", "record_waiters", "item_open", "item_end", "sync_row",
        "wake_scheduled", "busy_starts", "busy_ends", "busy_until",
    )

    def __init__(self, trace: RankTrace, matcher: CollectiveMatcher, overlap_slowdown: float, kernel_gap_us: float = 0.0,
                 graph_kernel_gap_us: float | None = None) -> None:
        n = trace.n
        self.rank = trace.rank
        self.trace = trace
        self.matcher = matcher
        self.slowdown = overlap_slowdown
        # Per row: the front end's gap before a queued kernel (a CUDA graph's replayed kernels have their own).
        graph_gap = kernel_gap_us if graph_kernel_gap_us is None else graph_kernel_gap_us
        replayed = trace.graph_replay
        self.gaps = [kernel_gap_us] * n if replayed is None else [graph_gap if r else kernel_gap_us for r in replayed]
        self.host_time_us = 0.0
        self.pos = 0
        # Per row: issue = host time after launching; start/end = GPU interval (host interval for syncs).
        self.issue_us = [math.nan] * n
        self.start_us = [math.nan] * n
        self.end_us = [math.nan] * n
        self.stream_free: dict[int, float] = {}  # stream -> when its issued work is done (if not blocked)
        self.queues: dict[int, deque[int]] = {}  # blocked stream -> rows waiting; the head blocks it
        self.record_time: dict[int, float] = {}  # event_record row -> completion time
        self.record_waiters: dict[int, set[int]] = {}  # event_record row -> streams blocked on it
        self.item_open: dict[int, int] = {}  # collective item head row -> calls still in flight
        self.item_end: dict[int, float] = {}  # collective item head row -> latest end so far
        self.sync_row = -1  # row of the sync the host is blocked at, or -1
        self.wake_scheduled = False
        self.busy_starts: list[float] = []  # merged intervals when a collective runs on this rank
        self.busy_ends: list[float] = []
        self.busy_until = 0.0

    @property
    def finished(self) -> bool:
        """Whether the host issued every row and every stream drained."""
        return self.pos == self.trace.n and not self.queues and self.sync_row < 0

    def final_time_us(self) -> float:
        """When this rank's host and GPU are both done, microseconds."""
        ends = [e for e in self.end_us if e == e]
        return max(self.host_time_us, max(ends, default=0.0))

    def run_host(self, now_us: float) -> list:
        """Issue rows from `pos` until a sync blocks or the trace ends; returns the events created."""
        tr = self.trace
        kind, stream, host, duration, launch = tr.kind, tr.stream, tr.host_us, tr.duration_us, tr.launch_us
        issue, start, end = self.issue_us, self.start_us, self.end_us
        free, queues = self.stream_free, self.queues
        slow = self.slowdown != 1.0
        gaps = self.gaps
        t = max(self.host_time_us, now_us)
        if self.sync_row >= 0:
            end[self.sync_row] = t
            self.sync_row = -1
            self.wake_scheduled = False
        events: list = []
        i, n = self.pos, tr.n
        while i < n:
            k = kind[i]
            t += host[i]
            issue[i] = t
            if k <= MEMCPY:
                s = stream[i]
                if s in queues:
                    queues[s].append(i)
                else:
                    f = free.get(s, 0.0)
                    if k == KERNEL and f > 0.0:  # not before the front end's gap after the stream's last work
                        f += gaps[i]
                    st = t if t > f else f
                    if slow and k == KERNEL and st < self.busy_until:
                        e = stretched_end_us(st, duration[i], self.busy_starts, self.busy_ends, self.slowdown)
                    else:
                        e = st + duration[i]
                    last_launch = t + launch[i]  # the host launches the row's kernels while the GPU runs the first
                    if e < last_launch:  # not done before the host's last launch
                        e = last_launch
                    start[i] = st
                    end[i] = e
                    free[s] = e
                t += launch[i]
            elif k == COLLECTIVE:
                head, rows = i, tr.batch[i]
                for r in rows[1:]:  # the rest of a send/recv batch is launched back to back
                    t += host[r]
                    issue[r] = t
                i = rows[-1]
                events.extend(self._enqueue(stream[head], head))
            elif k == EVENT_RECORD or k == STREAM_WAIT:
                events.extend(self._enqueue(stream[i], i))
            elif k == SYNC:
                start[i] = t
                done = self._sync_done(i)
                if done is None:
                    self.sync_row, self.pos, self.host_time_us = i, i + 1, t
                    return events
                if done > t:
                    t = done
                end[i] = t
            else:  # ITERATION_END or HOST: host-side only (the host already paid host_us)
                start[i] = end[i] = t
            i += 1
        self.pos, self.host_time_us = n, t
        return events

    def comm_started(self, row: int, start_us: float, end_us: float) -> None:
        """The matcher started the call at `row`: record its interval (and, if it slows compute, its busy time)."""
        self.start_us[row] = start_us
        self.end_us[row] = end_us
        if self.slowdown != 1.0 and end_us > start_us:
            add_busy_interval(self.busy_starts, self.busy_ends, start_us, end_us)
            self.busy_until = max(self.busy_until, end_us)

    def comm_done(self, head_row: int, time_us: float) -> list:
        """One call of the item at `head_row` ended at `time_us`; drain its stream when all have."""
        self.item_open[head_row] -= 1
        if time_us > self.item_end[head_row]:
            self.item_end[head_row] = time_us
        if self.item_open[head_row]:
            return []
        return self._drain([self.trace.stream[head_row]])

    def _enqueue(self, s: int, row: int) -> list:
        queue = self.queues.get(s)
        if queue is not None:
            queue.append(row)
            return []
        self.queues[s] = deque((row,))
        return self._drain([s])

    def _drain(self, work: list[int]) -> list:
        """Time the queued rows of the streams in `work` until each empties or blocks again."""
        tr = self.trace
        kind, duration, launch = tr.kind, tr.duration_us, tr.launch_us
        issue, start, end = self.issue_us, self.start_us, self.end_us
        slow = self.slowdown != 1.0
        gaps = self.gaps
        events: list = []
        while work:
            s = work.pop()
            queue = self.queues.get(s)
            if queue is None:
                continue
            f = self.stream_free.get(s, 0.0)
            while queue:
                i = queue[0]
                k = kind[i]
                if k <= MEMCPY:
                    t = issue[i]
                    if k == KERNEL and f > 0.0:  # as in run_host
                        f += gaps[i]
                    st = t if t > f else f
                    if slow and k == KERNEL and st < self.busy_until:
                        f = stretched_end_us(st, duration[i], self.busy_starts, self.busy_ends, self.slowdown)
                    else:
                        f = st + duration[i]
                    if f < t + launch[i]:  # as in run_host
                        f = t + launch[i]
                    start[i] = st
                    end[i] = f
                elif k == EVENT_RECORD:
                    self.record_time[i] = start[i] = end[i] = f
                    work.extend(self.record_waiters.pop(i, ()))
                elif k == STREAM_WAIT:
                    record = tr.wait_record[i]
                    if record >= 0:
                        record_us = self.record_time.get(record)
                        if record_us is None:
                            self.record_waiters.setdefault(record, set()).add(s)
                            break
                        start[i] = f
                        if record_us > f:
                            f = record_us
                    else:  # waiting on a never-recorded event is a no-op in CUDA
                        start[i] = f
                    end[i] = f
                else:  # COLLECTIVE item: register once, then wait for its CommDone events
                    open_calls = self.item_open.get(i)
                    if open_calls is None:
                        rows = tr.batch[i]
                        ready = max(issue[rows[-1]], f)
                        self.item_open[i] = len(rows)
                        self.item_end[i] = ready
                        for r in rows:
                            events.extend(self.matcher.register(self, tr.comm[r], i, ready))
                        break
                    if open_calls:
                        break
                    f = self.item_end.pop(i)
                    del self.item_open[i]
                queue.popleft()
            self.stream_free[s] = f
            if not queue:
                del self.queues[s]
        if self.sync_row >= 0 and not self.wake_scheduled:
            done = self._sync_done(self.sync_row)
            if done is not None:
                self.wake_scheduled = True
                events.append(HostRun(time_us=max(done, self.host_time_us), state=self))
        return events

    def _sync_done(self, row: int) -> float | None:
        """When the GPU work that the sync at `row` waits for is done; None while not yet known."""
        record = self.trace.wait_record.get(row)
        if record is not None:  # event.synchronize()
            return self.record_time.get(record) if record >= 0 else 0.0
        streams = self.trace.sync_streams[row]
        if streams is None:
            streams = set(self.stream_free) | set(self.queues)
        if any(s in self.queues for s in streams):
            return None
        return max((self.stream_free.get(s, 0.0) for s in streams), default=0.0)

    def describe_blocked(self) -> str:
        """What this rank is stuck on, for error messages."""
        parts = []
        for s, queue in sorted(self.queues.items()):
            head = queue[0]
            if self.trace.kind[head] == COLLECTIVE:
                call = self.trace.comm[head]
                what = f"{call.op.value} #{call.group_seq} on group {call.group_name!r}"
            else:
                what = f"event {self.trace.event_id[head]} (row {head})"
            parts.append(f"stream {s} waits for {what}")
        if self.sync_row >= 0:
            parts.append(f"host waits at {self.trace.labels['op'][self.sync_row]} (row {self.sync_row})")
        if self.pos < self.trace.n and self.sync_row < 0:
            parts.append(f"host stopped at row {self.pos}")
        return "; ".join(parts) or "not blocked"
