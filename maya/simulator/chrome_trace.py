"""Export a simulation's timelines as a Chrome/Perfetto JSON trace (opens in ui.perfetto.dev).

Trace Event Format (https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU):
one complete event ("ph": "X") per GPU op and per host launch or sync wait, ts/dur in microseconds,
args module, kind and iteration,
pid = rank, tid = CUDA stream id for GPU work and `HOST_TID` for the host thread; "M" metadata
events name processes "rank <r>" and threads "host" / "stream <s>" and sort the host first.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from pathlib import Path

from maya.simulator.result import SimulationResult

HOST_TID = 1_000_000
"""Thread id of the host thread: positive (some importers reject negative ids) and above any stream id."""

_GPU_KINDS = frozenset({"kernel", "memcpy", "collective"})


def chrome_trace_events(result: SimulationResult, ranks: Iterable[int] | None = None) -> list[dict]:
    """Trace events of the given representative ranks (default: all of them)."""
    wanted = sorted(result.timelines) if ranks is None else sorted(ranks)
    events: list[dict] = []
    for rank in wanted:
        timeline = result.timelines[rank].to_pandas()
        members = result.breakdown[rank].members
        label = f"rank {rank}" + (f" (x{members} ranks)" if members > 1 else "")
        events.append({"name": "process_name", "ph": "M", "pid": rank, "args": {"name": label}})
        events.append({"name": "thread_name", "ph": "M", "pid": rank, "tid": HOST_TID, "args": {"name": "host"}})
        events.append({"name": "thread_sort_index", "ph": "M", "pid": rank, "tid": HOST_TID, "args": {"sort_index": -1}})
        for stream in sorted(set(timeline["stream"].tolist())):
            events.append({"name": "thread_name", "ph": "M", "pid": rank, "tid": stream, "args": {"name": f"stream {stream}"}})
        columns = zip(
            timeline["kind"].astype(str), timeline["op"], timeline["module"], timeline["stream"],
            timeline["host_start_us"], timeline["issue_us"], timeline["start_us"], timeline["end_us"],
            timeline["iteration"],
        )
        for kind, op, module, stream, host_start, issue, start, end, iteration in columns:
            args = {"module": module, "kind": kind, "iteration": int(iteration)}
            if issue > host_start:
                events.append({"name": op, "ph": "X", "pid": rank, "tid": HOST_TID, "ts": host_start,
                               "dur": issue - host_start, "args": args})
            if math.isnan(start):
                continue
            if kind in _GPU_KINDS:
                events.append({"name": op, "ph": "X", "pid": rank, "tid": int(stream), "ts": start,
                               "dur": end - start, "args": args})
            elif kind == "sync" and end > start:
                events.append({"name": f"wait {op}", "ph": "X", "pid": rank, "tid": HOST_TID, "ts": start,
                               "dur": end - start, "args": args})
    return events


def export_chrome_trace(result: SimulationResult, path: str | os.PathLike, ranks: Iterable[int] | None = None) -> Path:
    """Write the timelines of `ranks` (default: every representative) as a JSON trace file; returns its path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    trace = {"traceEvents": chrome_trace_events(result, ranks), "displayTimeUnit": "ms"}
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(trace, separators=(",", ":")))
    os.replace(tmp, path)
    return path
