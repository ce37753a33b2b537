"""Replay the allocation sequences a real GPU's caching allocator answered on Maya's `CachingAllocator`.

`benchmarks/gpu/allocator_replay.py` ran fixed sequences of allocations, frees and `empty_cache` calls
on a GPU under several PYTORCH_CUDA_ALLOC_CONF settings and recorded `memory_allocated()`,
`memory_reserved()` and out-of-memory errors after every operation. This script runs the same
operations on the emulated allocator with the same setting and prints, per setting and sequence, how
many operations end with different figures and the largest reserved-memory difference.

    python benchmarks/allocator_replay_check.py [REPLAY_JSON_GZ]

(default: the committed replay, measured on an H100 in session 33). Exit status 1 when any figure differs.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

from maya.emulator import allocator_config
from maya.emulator.allocator import CachingAllocator, EmulatedOutOfMemory
from maya.emulator.state import CUDA_CONTEXT_BYTES

DEFAULT_REPLAY = Path(__file__).resolve().parent / "gpu" / "session33" / "s33" / "allocator_replay.json.gz"
MIB = 1 << 20


def replay(run: dict, sequence: dict) -> dict:
    """The emulated allocator's allocated / reserved / oom after each of `sequence`'s operations, and its
    flattened memory_stats() after the last one."""
    total = run["total_memory_bytes"]
    config = allocator_config.parse(run["alloc_conf"])[0]
    allocator = CachingAllocator(total - CUDA_CONTEXT_BYTES, config=config, device_total_bytes=total)
    allocator.limit_bytes = sequence.get("effective_limit_bytes")
    live, allocated, reserved, oom = {}, [], [], []
    for op in sequence["ops"]:
        failed = False
        if op[0] == "a":
            try:
                live[op[1]] = allocator.malloc(op[2], stream=op[3])
            except EmulatedOutOfMemory:
                failed = True
        elif op[0] == "f":
            if (block := live.pop(op[1], None)) is not None:
                allocator.free(block)
        else:
            allocator.empty_cache()
        allocated.append(allocator.stats.allocated_bytes)
        reserved.append(allocator.stats.reserved_bytes)
        oom.append(failed)
    return {"allocated": allocated, "reserved": reserved, "oom": oom, "stats": allocator.flat_memory_stats()}


def compare(run: dict, sequence: dict) -> dict:
    """Operations whose figures differ between the GPU and the emulation, and the first of them."""
    emulated = replay(run, sequence)
    n = len(sequence["ops"])
    differ = [i for i in range(n) if any(emulated[k][i] != sequence[k][i] for k in ("allocated", "reserved", "oom"))]
    worst = max((abs(emulated["reserved"][i] - sequence["reserved"][i]) for i in range(n)), default=0)
    gpu_stats = sequence.get("stats", {})
    stats_differ = sorted(k for k, v in emulated["stats"].items() if k in gpu_stats and gpu_stats[k] != v)
    return {
        "config": run["config"], "sequence": sequence["name"], "ops": n, "differ": len(differ),
        "first": differ[0] if differ else None, "worst_reserved_mib": worst / MIB,
        "gpu_peak_reserved_mib": max(sequence["reserved"], default=0) / MIB,
        "ooms": sum(sequence["oom"]),
        "stats_compared": sum(k in gpu_stats for k in emulated["stats"]),
        "stats_differ": stats_differ,
    }


def load(path: Path) -> dict:
    with gzip.open(path, "rt") as f:
        return json.load(f)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("replay", nargs="?", type=Path, default=DEFAULT_REPLAY)
    args = p.parse_args(argv)
    data = load(args.replay)
    rows = [compare(run, seq) for run in data["runs"] if "sequences" in run for seq in run["sequences"]]
    print(f"{args.replay}: measured {data['date_utc']} on {data['runs'][0].get('gpu_name')}")
    print(f"{'setting':<15} {'sequence':<14} {'ops':>5} {'differ':>6} {'first':>6} {'worst reserved MiB':>18} "
          f"{'GPU peak reserved MiB':>21} {'OOMs':>5}  memory_stats keys that differ")
    for r in rows:
        print(f"{r['config']:<15} {r['sequence']:<14} {r['ops']:>5} {r['differ']:>6} {str(r['first']):>6} "
              f"{r['worst_reserved_mib']:>18.1f} {r['gpu_peak_reserved_mib']:>21.1f} {r['ooms']:>5}  "
              f"{len(r['stats_differ'])} of {r['stats_compared']}: {', '.join(r['stats_differ'][:6])}")
    failed = [run["config"] for run in data["runs"] if "sequences" not in run]
    if failed:
        print(f"settings that failed on the GPU: {', '.join(failed)}")
    return 1 if any(r["differ"] or r["stats_differ"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
