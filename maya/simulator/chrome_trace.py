"""Export a simulation's timelines as a Chrome/Perfetto JSON trace (opens in ui.perfetto.dev).

Trace Event Format (https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU):
one complete event ("ph": "X") per GPU op and per host launch or sync wait, ts/dur in microseconds,
args module, kind and iteration,
pid = rank, tid = CUDA stream id for GPU work and `HOST_TID` for the host thread; "M" metadata
events name processes "rank <r>" and threads "host" / "stream <s>" and sort the host first.

Above the ops of each track, nested slices show the modules that issued them: one slice per run of
consecutive ops on that track under the same module path prefix (`blocks`, `blocks.3`,
`blocks.3.attn`) in the same phase, from its first op's start to its last op's end, named by the
prefix (with " backward" for the backward pass, activation-checkpoint recomputation included); args
module, phase and kind "module", and no iteration, so that tools summing an iteration's op events
leave them out. Ops in no module (the loss, the optimizer) have none above them.

Each rank also has a track "iterations" (`ITERATIONS_TID`, shown first) with one slice per iteration,
from the end of the one before (or the start) to its end, named "iteration <k>" with its time in
args (kind "iteration", index k, and no `iteration` key, like the module slices), and a counter
"GPU memory (GiB)" with the emulated allocator's allocated and reserved memory after each op, at
the time the host issued it.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from maya.simulator.result import SimulationResult
from maya.trace import Phase

HOST_TID = 1_000_000
"""Thread id of the host thread: positive (some importers reject negative ids) and above any stream id."""
ITERATIONS_TID = HOST_TID + 1
"""Thread id of the track of iteration slices."""
_GIB = float(1 << 30)

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
        events += _iteration_slices(result.rank_iteration_ends_us.get(rank, ()), rank)
        events += _memory_counters(timeline, rank)
        for stream in sorted(set(timeline["stream"].tolist())):
            events.append({"name": "thread_name", "ph": "M", "pid": rank, "tid": stream, "args": {"name": f"stream {stream}"}})
        events += _module_slices(timeline, rank)
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


def _iteration_slices(ends_us, rank: int) -> list[dict]:
    """The iterations track of one rank: its name and sort index, and a slice per iteration."""
    if not len(ends_us):
        return []
    events = [{"name": "thread_name", "ph": "M", "pid": rank, "tid": ITERATIONS_TID, "args": {"name": "iterations"}},
              {"name": "thread_sort_index", "ph": "M", "pid": rank, "tid": ITERATIONS_TID, "args": {"sort_index": -2}}]
    start = 0.0
    for k, end in enumerate(ends_us):
        events.append({"name": f"iteration {k}", "ph": "X", "pid": rank, "tid": ITERATIONS_TID, "ts": start,
                       "dur": end - start, "args": {"kind": "iteration", "index": k, "time_ms": (end - start) / 1e3}})
        start = end
    return events


def _memory_counters(timeline, rank: int) -> list[dict]:
    """The GPU memory counter of one rank: a sample where allocated or reserved memory changed."""
    if "allocated_bytes" not in timeline or timeline["allocated_bytes"].isna().all():
        return []
    allocated = timeline["allocated_bytes"].ffill().fillna(0).to_numpy()
    reserved = timeline["reserved_bytes"].ffill().fillna(0).to_numpy()
    issue = timeline["issue_us"].to_numpy()
    changed = np.r_[True, (allocated[1:] != allocated[:-1]) | (reserved[1:] != reserved[:-1])]
    return [{"name": "GPU memory (GiB)", "ph": "C", "pid": rank, "ts": float(issue[i]),
             "args": {"allocated": allocated[i] / _GIB, "reserved": reserved[i] / _GIB}}
            for i in np.flatnonzero(changed).tolist()]


def _module_slices(timeline, rank: int) -> list[dict]:
    """The module slices (module docstring) of one rank's timeline (a DataFrame): on the host track over
    every row (host_start_us to issue_us, or a sync's wait end), on each stream over its GPU rows."""
    kind = timeline["kind"].astype(str).to_numpy()
    module = timeline["module"].to_numpy(dtype=object)
    phase = (timeline["phase"] if "phase" in timeline else np.full(len(timeline), "")).to_numpy(dtype=object)
    host_start, issue = timeline["host_start_us"].to_numpy(), timeline["issue_us"].to_numpy()
    start, end = timeline["start_us"].to_numpy(), timeline["end_us"].to_numpy()
    waited = (kind == "sync") & (end > issue)
    host_end = np.where(waited, end, issue)
    tracks = [(HOST_TID, np.arange(len(timeline)), host_start, host_end)]
    gpu = np.isin(kind, list(_GPU_KINDS)) & ~np.isnan(start)
    stream = timeline["stream"].to_numpy()
    for s in sorted(set(stream[gpu].tolist())):
        rows = np.flatnonzero(gpu & (stream == s))
        rows = rows[np.argsort(start[rows], kind="stable")]
        tracks.append((int(s), rows, start, end))
    events = []
    for tid, rows, begin, finish in tracks:
        for name, path, row_phase, ts, te in module_runs(module[rows], phase[rows], begin[rows], finish[rows]):
            events.append({"name": name, "ph": "X", "pid": rank, "tid": tid, "ts": ts, "dur": te - ts,
                           "args": {"module": path, "phase": row_phase, "kind": "module"}})
    return events


def module_runs(modules: np.ndarray, phases: np.ndarray, begin: np.ndarray, finish: np.ndarray) -> list[tuple]:
    """Rows of one track in time order -> (name, module prefix, phase, start, end) of every maximal run
    of consecutive rows under the same module path prefix and phase, for each prefix depth: runs of a
    deeper prefix lie inside the run of its parent, so the slices nest."""
    if not len(modules):
        return []
    unique, inverse = np.unique(modules.astype(str), return_inverse=True)
    parts = [m.split(".") if m else [] for m in unique.tolist()]
    phase_codes = np.unique(phases.astype(str), return_inverse=True)[1]
    runs = []
    for depth in range(1, max(map(len, parts), default=0) + 1):
        prefixes = [".".join(p[:depth]) if len(p) >= depth else "" for p in parts]
        names, prefix_id = np.unique(prefixes, return_inverse=True)
        key = prefix_id[inverse] * (phase_codes.max() + 1) + phase_codes
        first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        ts = np.minimum.reduceat(begin, first)
        te = np.maximum.reduceat(finish, first)
        for i, row in enumerate(first.tolist()):
            path = names[prefix_id[inverse[row]]]
            if not path:
                continue
            phase = str(phases[row])
            runs.append((path + (" backward" if phase == Phase.BACKWARD.value else ""), path, phase, float(ts[i]),
                         float(te[i])))
    return runs


def export_chrome_trace(result: SimulationResult, path: str | os.PathLike, ranks: Iterable[int] | None = None) -> Path:
    """Write the timelines of `ranks` (default: every representative) as a JSON trace file; returns its path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    trace = {"traceEvents": chrome_trace_events(result, ranks), "displayTimeUnit": "ms"}
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(trace, separators=(",", ":")))
    os.replace(tmp, path)
    return path
