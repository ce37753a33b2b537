"""Where a real optimizer step's host time goes, op by op, from host_phase_probe.py files.

    python benchmarks/optimizer_host_ops.py benchmarks/gpu/host_phase_h100/lease_c [--top 4]

For each workload's probe file in the lease directory (`NAME.json.gz`, `benchmarks/gpu/host_phase_probe.py`:
perf_counter at each aten op's entry to dispatch, per thread, for one iteration), it takes the main
thread's ops from the iteration's first `_foreach_`/`_fused_` op on (the optimizer step: parameter
updates, and for Adam(W) the step counters) and charges each op the gap to the next one's entry: its
host time plus the Python before the next. Printed per workload: the ops, their summed gaps, and
the op names with the most of it. The gaps include the probe's dispatch-mode cost per op
(`mode_overhead.json`), so they bound each op's time from above.

Session 36 found with it that `torch.optim.AdamW(foreach=True)` without `capturable` reads every
parameter's step counter twice with `.item()` (`aten::_local_scalar_dense` on a CPU tensor: two
per parameter), which Maya never records (no GPU tensor is involved) and the microbenchmark's Adam
step includes in its per-tensor slope.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from host_phase_factors import probe_files  # noqa: E402


def optimizer_gaps(probe: dict) -> tuple[int, dict[str, tuple[int, float]]]:
    """(ops from the first foreach or fused optimizer op on, op name -> (calls, summed gap in us)) of
    the probe's main-thread forward ops (the optimizer step runs there); (0, {}) without such an op."""
    ops = [o for o in probe["ops"] if o["thread"] == 0 and not o["backward"]]
    first = next((i for i, o in enumerate(ops) if "_foreach" in o["op"] or "_fused" in o["op"]), None)
    if first is None:
        return 0, {}
    step = ops[first:]
    calls: collections.Counter = collections.Counter()
    gaps: dict[str, float] = collections.defaultdict(float)
    for op, after in zip(step, step[1:]):
        calls[op["op"]] += 1
        gaps[op["op"]] += after["t_us"] - op["t_us"]
    return len(step), {name: (calls[name], gaps[name]) for name in gaps}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("lease", type=Path, help="a directory of host_phase_probe.py files (NAME.json.gz)")
    p.add_argument("--top", type=int, default=4, help="op names listed per workload")
    args = p.parse_args(argv)
    files = probe_files(args.lease)
    if not files:
        p.error(f"no host_phase_probe.py files (NAME.json.gz) in {args.lease}")
    for name, path in files.items():
        n, gaps = optimizer_gaps(json.loads(gzip.decompress(path.read_bytes())))
        total = sum(us for _, us in gaps.values())
        print(f"{name}: {n} ops, {total / 1e3:.2f} ms from the first foreach or fused op on")
        for name, (calls, us) in sorted(gaps.items(), key=lambda kv: -kv[1][1])[: args.top]:
            print(f"    {name:45s} x{calls:<5d} {us / 1e3:7.2f} ms  {us / calls:7.1f} us each")


if __name__ == "__main__":
    main()
