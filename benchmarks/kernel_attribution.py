"""Which kernels of a profiled GPU iteration the per-op table charges to no aten op, and why.

    python benchmarks/kernel_attribution.py benchmarks/gpu/op_times_h200/NAME.trace.json.gz [--top 20]

Reads a Chrome trace written by `benchmarks/gpu/op_time_probe.py --chrome`. Each GPU activity
(kernel, memcpy, memset) is tied to the CUDA runtime call that launched it (the `correlation`
argument), and that call to the innermost CPU op enclosing it on the same thread. It prints the GPU
time per activity category, the time whose innermost enclosing op is an `aten::` op and the rest,
and the largest kernel names in the rest with the CPU range (record_function or op) around them.
"""

from __future__ import annotations

import argparse
import bisect
import collections
import gzip
import json
from collections.abc import Callable, Iterator
from pathlib import Path

GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


def _innermost(ops: list[tuple[float, float, str]], starts: list[float], ts: float) -> str | None:
    """Name of the innermost op (latest start) of `ops` (sorted by start) whose span contains `ts`."""
    i = bisect.bisect_right(starts, ts) - 1
    while i >= 0:
        start, end, name = ops[i]
        if start <= ts <= end:
            return name
        i -= 1
    return None


def read_events(path: str | Path) -> list[dict]:
    """The complete ("X") events of a Chrome trace file (.json or .json.gz)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        data = json.load(f)
    return [e for e in (data["traceEvents"] if isinstance(data, dict) else data) if e.get("ph") == "X"]


def cpu_op_stacks(events: list[dict]) -> Iterator[tuple[dict, list[dict], bool]]:
    """Each CPU op of `events` with the ops of its thread that enclose it (outermost first) and whether
    its thread runs autograd engine ops (the backward), thread by thread in start order."""
    cpu = [e for e in events if e.get("cat") == "cpu_op"]
    engine = {e["tid"] for e in cpu if e["name"].startswith("autograd::engine")}
    by_tid: dict[object, list[dict]] = collections.defaultdict(list)
    for e in cpu:
        by_tid[e["tid"]].append(e)
    for tid, ops in by_tid.items():
        ops.sort(key=lambda e: (e["ts"], -e.get("dur", 0)))
        stack: list[dict] = []
        for e in ops:
            while stack and stack[-1]["ts"] + stack[-1].get("dur", 0) <= e["ts"]:
                stack.pop()
            yield e, stack, tid in engine
            stack.append(e)


def launch_owners(events: list[dict]) -> Callable[[dict], str | None]:
    """For a GPU activity of `events`, the innermost CPU op (or record_function range) enclosing the
    CUDA runtime call that launched it on the same thread, tied by the `correlation` argument."""
    ops_by_tid: dict[object, list[tuple[float, float, str]]] = collections.defaultdict(list)
    launch: dict[int, tuple[object, float]] = {}
    for e in events:
        cat = e.get("cat", "")
        if cat in ("cpu_op", "user_annotation"):
            ops_by_tid[e["tid"]].append((e["ts"], e["ts"] + e.get("dur", 0), e["name"]))
        elif cat in ("cuda_runtime", "cuda_driver"):
            launch[e.get("args", {}).get("correlation", -1)] = (e["tid"], e["ts"])
    starts = {}
    for tid, ops in ops_by_tid.items():
        ops.sort()
        starts[tid] = [o[0] for o in ops]

    def owner(activity: dict) -> str | None:
        tid_ts = launch.get(activity.get("args", {}).get("correlation", -2))
        if tid_ts is None or tid_ts[0] not in starts:
            return None
        return _innermost(ops_by_tid[tid_ts[0]], starts[tid_ts[0]], tid_ts[1])

    return owner


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("trace")
    p.add_argument("--top", type=int, default=20)
    args = p.parse_args()
    events = read_events(args.trace)
    owner_of = launch_owners(events)
    by_category: dict[str, float] = collections.Counter()
    attributed_us = 0.0
    rest: dict[tuple[str, str], list[float]] = collections.defaultdict(lambda: [0.0, 0])
    for e in events:
        cat = e.get("cat", "")
        if cat not in GPU_CATEGORIES:
            continue
        dur = e.get("dur", 0.0)
        by_category[cat] += dur
        owner = owner_of(e)
        if owner is not None and owner.startswith("aten::"):
            attributed_us += dur
        else:
            entry = rest[(e["name"][:90], owner or "<no CPU op>")]
            entry[0] += dur
            entry[1] += 1
    total = sum(by_category.values())
    print(f"{Path(args.trace).name}: GPU time {total / 1e3:.2f} ms "
          f"({', '.join(f'{c} {t / 1e3:.2f}' for c, t in by_category.items())}); "
          f"under an aten op {attributed_us / 1e3:.2f} ms, elsewhere {(total - attributed_us) / 1e3:.2f} ms")
    for (name, owner), (us, n) in sorted(rest.items(), key=lambda kv: -kv[1][0])[: args.top]:
        print(f"  {us / 1e3:7.3f} ms x{n:<4d} {name}  <- {owner[:70]}")


if __name__ == "__main__":
    main()
