"""Shared helpers for simulator tests: a tiny trace builder, a zero-latency NVLink cluster, a real tiny GPT trace."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from maya.hardware.cluster import ClusterSpec, cluster_from_dict


class TraceBuilder:
    """Builds one rank's trace row by row; every row's host cost is `host_us` unless given."""

    def __init__(self, host_us: float = 0.0) -> None:
        self.rows: list[dict] = []
        self.default_host_us = host_us

    def _add(self, kind: str, op: str, *, stream: int = 0, event_id: int = -1, duration_us: float = 0.0,
             host_us: float | None = None, module: str = "", phase: str = "", **collective) -> TraceBuilder:
        row = {
            "seq": len(self.rows), "kind": kind, "op": op, "module": module, "phase": phase, "stream": stream,
            "event_id": event_id, "duration_us": duration_us,
            "host_us": self.default_host_us if host_us is None else host_us,
            "group_name": None, "group_ranks": None, "group_seq": None, "message_bytes": None, "peer": None,
        }
        row.update(collective)
        self.rows.append(row)
        return self

    def kernel(self, duration_us: float, *, op: str = "aten::mm", **kw) -> TraceBuilder:
        return self._add("kernel", op, duration_us=duration_us, **kw)

    def record(self, event_id: int, *, stream: int = 0, **kw) -> TraceBuilder:
        return self._add("event_record", "cuda:event_record", stream=stream, event_id=event_id, **kw)

    def wait(self, event_id: int, *, stream: int = 0, **kw) -> TraceBuilder:
        return self._add("stream_wait", "cuda:stream_wait_event", stream=stream, event_id=event_id, **kw)

    def sync(self, op: str = "cuda:synchronize", **kw) -> TraceBuilder:
        return self._add("sync", op, **kw)

    def collective(self, op: str, message_bytes: int, group_ranks: list[int], *, group: str = "g",
                   seq: int | None = None, **kw) -> TraceBuilder:
        return self._add("collective", f"nccl:{op}", group_name=group, group_ranks=group_ranks,
                         group_seq=seq, message_bytes=message_bytes, **kw)

    def send(self, peer: int, message_bytes: int = 0, *, group_ranks: list[int] | None = None, **kw) -> TraceBuilder:
        return self._add("collective", "nccl:send", group_name="pp", group_ranks=group_ranks or [0, 1],
                         message_bytes=message_bytes, peer=peer, **kw)

    def recv(self, peer: int, message_bytes: int = 0, *, group_ranks: list[int] | None = None, **kw) -> TraceBuilder:
        return self._add("collective", "nccl:recv", group_name="pp", group_ranks=group_ranks or [0, 1],
                         message_bytes=message_bytes, peer=peer, **kw)

    def iteration_end(self, **kw) -> TraceBuilder:
        return self._add("iteration_end", "maya:iteration_end", **kw)

    def table(self) -> pa.Table:
        schema = pa.schema([
            ("seq", pa.int64()), ("kind", pa.string()), ("op", pa.string()), ("module", pa.string()),
            ("phase", pa.string()), ("stream", pa.int32()), ("event_id", pa.int64()), ("duration_us", pa.float64()),
            ("host_us", pa.float64()), ("group_name", pa.string()), ("group_ranks", pa.list_(pa.int32())),
            ("group_seq", pa.int64()), ("message_bytes", pa.int64()), ("peer", pa.int32()),
        ])
        return pa.Table.from_pylist(self.rows, schema=schema)


@pytest.fixture
def trace() -> type[TraceBuilder]:
    """The `TraceBuilder` class: `trace(host_us=1.0).kernel(10).sync().table()`."""
    return TraceBuilder


@pytest.fixture
def nvlink_cluster() -> ClusterSpec:
    """One 8-GPU H200 node with zero link latencies, so collective times are pure bandwidth terms."""
    return cluster_from_dict({
        "gpu": "h200", "gpus_per_node": 8, "nics_per_node": 8, "nic_bandwidth_Gbps": 400,
        "nvlink_latency_us": 0.0, "nic_latency_us": 0.0,
    })


GPT_SCRIPT = Path(__file__).parents[2] / "examples" / "train_gpt.py"
TINY_GPT = ["--steps", "2", "--batch", "2", "--seq", "64", "--dim", "64", "--layers", "2", "--heads", "4", "--vocab", "512"]


@pytest.fixture(scope="session")
def gpt_run(tmp_path_factory):
    """One real `maya.emulate` of a two-step, two-layer GPT on an emulated H200: (summary, trace_dir)."""
    import maya

    trace_dir = tmp_path_factory.mktemp("gpt") / "trace"
    summary = maya.emulate(GPT_SCRIPT, TINY_GPT, trace_dir=trace_dir)
    assert summary.exit_code == 0, summary.error
    return summary, trace_dir
