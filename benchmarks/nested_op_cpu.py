"""Profiled CPU time of each aten op by the op it runs inside, in one profiled GPU iteration.

    python benchmarks/nested_op_cpu.py benchmarks/gpu/session23_h200/s23a/op_times/hf_llama_bf16.trace.json.gz [--top 25]

Reads a Chrome trace written by `benchmarks/gpu/op_time_probe.py --chrome` and, on the threads that
run the forward and optimizer (not the autograd engine's, which runs every backward op from C++),
pairs each CPU op with the innermost CPU op enclosing it ("top" when none does: a call from Python).
It prints, per (op, enclosing op) pair with the most calls, the median profiled duration: for
example an autocast cast (`aten::to` inside `aten::linear`) against a top-level `aten::mul`. The
profiler adds its own cost to every op it records, so the figures compare ops with each other; they
are not the unprofiled host time.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernel_attribution import cpu_op_stacks, read_events  # noqa: E402


def durations_by_parent(events: list[dict]) -> dict[tuple[str, str], list[float]]:
    """(op, innermost enclosing op or "top") -> the profiled durations (us) of its calls, on the
    threads without autograd engine ops."""
    out: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
    for e, stack, engine in cpu_op_stacks(events):
        if not engine:
            out[(e["name"], stack[-1]["name"] if stack else "top")].append(e.get("dur", 0))
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace", type=Path, help="profiled Chrome trace (.json or .json.gz)")
    p.add_argument("--top", type=int, default=25, help="(op, enclosing op) pairs listed, most calls first")
    args = p.parse_args(argv)
    pairs = durations_by_parent(read_events(args.trace))
    print("| op | inside | calls | median profiled us |\n|---|---|---:|---:|")
    for (op, parent), durations in sorted(pairs.items(), key=lambda kv: -len(kv[1]))[: args.top]:
        print(f"| {op} | {parent} | {len(durations)} | {statistics.median(durations):.1f} |")


if __name__ == "__main__":
    main()
