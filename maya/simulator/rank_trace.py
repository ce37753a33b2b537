"""`RankTrace`: one rank's trace, turned once into the flat Python lists the simulator's loops read.

Input: a pyarrow Table or pandas DataFrame with the trace columns (docs/trace-schema.md) plus
`duration_us` (estimated GPU time of kernel/memcpy rows) and, optionally, `host_us` (CPU time to
issue the row) and `launch_us` (CPU time a kernel row then spends launching kernels the GPU may
already run: a cuDNN RNN's per-step launches; `maya.estimator.host_cost.launch_stream_us`). Only
`seq`, `kind`, `op`, `stream`, `event_id` and `duration_us` are required; the collective columns are
required when the trace has collective rows.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from maya.estimator.collective import P2P_OPS, CollectiveOp, canonical_op
from maya.simulator.host_model import HostModel
from maya.trace.schema import EventKind

# Integer kind codes, in the order the simulator's loops test them.
KERNEL, MEMCPY, COLLECTIVE, EVENT_RECORD, STREAM_WAIT, SYNC, ITERATION_END, HOST = range(8)
KIND_CODES = {
    EventKind.KERNEL.value: KERNEL,
    EventKind.MEMCPY.value: MEMCPY,
    EventKind.COLLECTIVE.value: COLLECTIVE,
    EventKind.EVENT_RECORD.value: EVENT_RECORD,
    EventKind.STREAM_WAIT.value: STREAM_WAIT,
    EventKind.SYNC.value: SYNC,
    EventKind.ITERATION_END.value: ITERATION_END,
    EventKind.HOST.value: HOST,
}
KIND_NAMES = {code: name for name, code in KIND_CODES.items()}

REQUIRED_COLUMNS = ("seq", "kind", "op", "stream", "event_id", "duration_us")
COLLECTIVE_COLUMNS = ("group_name", "group_ranks", "group_seq", "message_bytes", "peer")

# Host syncs that wait for every stream of the device; other syncs wait for their own stream.
DEVICE_SYNC_OPS = frozenset({"cuda:synchronize", "cuda:device_synchronize"})

MatchKey = tuple
"""("coll", group_name, group_seq) or ("p2p", group_name, src, dst, n-th message src -> dst)."""


class CommCall(NamedTuple):
    """One collective or point-to-point row of a rank's trace (a NamedTuple: there are many)."""

    row: int
    """Row index in the rank's trace."""
    op: CollectiveOp
    """The NCCL operation."""
    message_bytes: int
    """nccl-tests "size" in bytes."""
    group_name: str
    """Process group name."""
    group_ranks: tuple[int, ...]
    """Global ranks of the process group."""
    group_seq: int
    """Per-group call number (from the trace, or counted here when the trace has none)."""
    key: MatchKey
    """What the matching call on the other ranks shares with this one."""
    participants: tuple[tuple[int, str], ...]
    """(global rank, role) pairs that must issue `key`: role "" for collectives, send/recv for p2p."""
    role: str
    """This rank's role in `participants`."""
    cost_ranks: tuple[int, ...]
    """Ranks the cost model prices: the group, or (src, dst) for send/recv."""


class RankTrace:
    """Columns of one rank's trace as Python lists (fast to index one row at a time)."""

    __slots__ = (
        "rank", "n", "kind", "stream", "event_id", "duration_us", "host_us", "launch_us", "graph_replay", "labels",
        "device_sync",
        "comm", "batch", "wait_record", "sync_streams", "group_calls",
    )

    def __init__(self, rank: int, trace: pa.Table | pd.DataFrame, host: HostModel) -> None:
        table = pa.Table.from_pandas(trace, preserve_index=False) if isinstance(trace, pd.DataFrame) else trace
        missing = [c for c in REQUIRED_COLUMNS if c not in table.column_names]
        if missing:
            raise ValueError(f"rank {rank}: trace lacks columns {missing}; it has {table.column_names}")
        table = table.sort_by("seq")
        self.rank = rank
        self.n = table.num_rows
        kinds = table.column("kind")
        codes = pc.index_in(kinds, value_set=pa.array(list(KIND_CODES)))
        if codes.null_count:
            bad = pc.filter(kinds, pc.is_null(codes))[0].as_py()
            raise ValueError(f"rank {rank}: unknown kind {bad!r}; expected one of {list(KIND_CODES)}")
        kind = codes.to_numpy(zero_copy_only=False).astype(np.int64)
        self.kind: list[int] = kind.tolist()
        self.stream: list[int] = table.column("stream").to_numpy(zero_copy_only=False).astype(np.int64).tolist()
        self.event_id: list[int] = table.column("event_id").to_numpy(zero_copy_only=False).astype(np.int64).tolist()
        duration = pc.fill_null(table.column("duration_us"), 0.0).to_numpy(zero_copy_only=False).astype(np.float64)
        self.duration_us: list[float] = np.where(kind <= MEMCPY, duration, 0.0).tolist()
        if "host_us" in table.column_names:
            host_us = pc.fill_null(table.column("host_us"), 0.0).to_numpy(zero_copy_only=False).astype(np.float64)
        else:
            host_us = np.where(kind <= COLLECTIVE, host.launch_us, host.other_us)
        self.host_us: list[float] = host_us.tolist()
        launch_us = (pc.fill_null(table.column("launch_us"), 0.0).to_numpy(zero_copy_only=False).astype(np.float64)
                     if "launch_us" in table.column_names else np.zeros(self.n))
        self.launch_us: list[float] = np.where(kind == KERNEL, launch_us, 0.0).tolist()
        replayed = (pc.fill_null(table.column("graph_replay"), False).to_numpy(zero_copy_only=False).astype(bool)
                    if "graph_replay" in table.column_names else None)
        self.graph_replay: list[bool] | None = replayed.tolist() if replayed is not None and replayed.any() else None
        """Per row, whether a CUDA graph's replay launched it (the optional `graph_replay` column); None: no row."""
        module = table.column("module") if "module" in table.column_names else pa.nulls(self.n, pa.string())
        phase = table.column("phase") if "phase" in table.column_names else pa.nulls(self.n, pa.string())
        # Text columns stay in Arrow: only results and error messages read them.
        memory = {name: table.column(name) if name in table.column_names else pa.nulls(self.n, pa.int64())
                  for name in ("allocated_bytes", "reserved_bytes")}
        self.labels = pa.table({
            "seq": table.column("seq"), "op": table.column("op"), "module": pc.fill_null(module, ""),
            "phase": pc.fill_null(phase, ""), **memory,
        })
        device_sync = pc.fill_null(pc.is_in(table.column("op"), value_set=pa.array(sorted(DEVICE_SYNC_OPS))), False)
        self.device_sync: list[bool] = device_sync.to_numpy(zero_copy_only=False).tolist()
        self._link_events()
        self._read_collectives(table)

    def _link_events(self) -> None:
        """Point every stream_wait and event sync at the latest record of its event before it."""
        self.wait_record: dict[int, int] = {}
        self.sync_streams: dict[int, tuple[int, ...] | None] = {}
        latest: dict[int, int] = {}
        for i, k in enumerate(self.kind):
            if k == EVENT_RECORD:
                latest[self.event_id[i]] = i
            elif k == STREAM_WAIT:
                self.wait_record[i] = latest.get(self.event_id[i], -1)
            elif k == SYNC:
                if self.event_id[i] >= 0:
                    self.wait_record[i] = latest.get(self.event_id[i], -1)
                # None: every stream of the device.
                self.sync_streams[i] = None if self.device_sync[i] else (self.stream[i],)

    def _read_collectives(self, table: pa.Table) -> None:
        """Build a `CommCall` per collective row and group consecutive p2p rows into batches."""
        self.comm: dict[int, CommCall] = {}
        self.batch: dict[int, list[int]] = {}
        self.group_calls: dict[str, list[int]] = {}
        rows = np.flatnonzero(np.asarray(self.kind) == COLLECTIVE)
        if len(rows) == 0:
            return
        missing = [c for c in COLLECTIVE_COLUMNS if c not in table.column_names]
        if missing:
            raise ValueError(f"rank {self.rank}: trace has collective rows but lacks columns {missing}")
        sub = table.select(["op", *COLLECTIVE_COLUMNS]).take(pa.array(rows))
        columns = {c: sub.column(c).to_pylist() for c in ("op", *COLLECTIVE_COLUMNS)}
        own_seq: dict[str, int] = {}
        p2p_count: dict[tuple, int] = {}
        ops: dict[str, CollectiveOp] = {}
        members: dict[tuple[int, ...], tuple[tuple[int, str], ...]] = {}
        for row, op_name, group, ranks, group_seq, message_bytes, peer in zip(
            rows.tolist(), columns["op"], columns["group_name"], columns["group_ranks"],
            columns["group_seq"], columns["message_bytes"], columns["peer"],
        ):
            op = ops.get(op_name) or ops.setdefault(op_name, canonical_op(op_name))
            group = group or ""
            group_ranks = tuple(ranks or ())
            if group_seq is None:
                group_seq = own_seq.get(group, 0)
            group_seq = int(group_seq)  # a float when the table went through pandas (the estimator)
            own_seq[group] = group_seq + 1
            if op in P2P_OPS:
                if peer is None:
                    raise ValueError(f"rank {self.rank}: {op_name} at row {row} has no peer")
                src, dst = (self.rank, peer) if op is CollectiveOp.SEND else (peer, self.rank)
                nth = p2p_count.get((group, src, dst, op), 0)
                p2p_count[(group, src, dst, op)] = nth + 1
                key = ("p2p", group, src, dst, nth)
                participants = ((src, "send"), (dst, "recv"))
                role = op.value
                cost_ranks = (src, dst)
            else:
                participants = members.get(group_ranks)
                if participants is None:
                    if self.rank not in group_ranks:
                        raise ValueError(f"rank {self.rank}: {op_name} on group {group!r} ranks {list(group_ranks)} excludes it")
                    participants = members[group_ranks] = tuple((r, "") for r in group_ranks)
                key = ("coll", group, group_seq)
                role = ""
                cost_ranks = group_ranks
            self.group_calls.setdefault(group, []).append(row)
            self.comm[row] = CommCall(
                row, op, int(message_bytes or 0), group, group_ranks, group_seq, key, participants, role, cost_ranks
            )
        # Consecutive send/recv rows on one stream are one NCCL group (batch_isend_irecv): they are
        # posted together, so that two ranks exchanging in opposite orders do not deadlock.
        head = -1
        for row in rows.tolist():
            call = self.comm[row]
            previous = self.comm.get(row - 1)
            if (
                call.op in P2P_OPS and previous is not None and previous.op in P2P_OPS
                and self.stream[row] == self.stream[row - 1] and head >= 0
            ):
                self.batch[head].append(row)
            else:
                head = row
                self.batch[head] = [row]
