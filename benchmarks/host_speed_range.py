"""How much faster or slower than the median H200 machine a host-bound step ran, over the lent machines.

    python benchmarks/host_speed_range.py [--write]

Eager PyTorch issues kernels from the CPU, so a step the host sets runs as fast as the machine's CPU:
the validation suite's host-bound steps moved by up to 134% between H200 leases
(benchmarks/results/ground_truth_repeatability_h200.md). This script takes the calibration workloads
whose step the host sets almost entirely, those whose profiled GPU time (the per-op self device time of
benchmarks/gpu/op_times_h200/<workload>.json) is under `HOST_SET_BUSY_SHARE` of their median measured
step, and pools every lease's step time over that workload's median over leases
(`ground_truth_repeatability.lease_times`). Its 10th and 90th percentiles are the host speed range:
`--write` stores them as `host_speed_range` in maya/estimator/data/h200/host_overhead.json, where
`maya.predict` scales a host-bound prediction's host costs by each to say what the step would take on
such machines. Held-out workloads are never read.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "benchmarks" / "validation"))
from ground_truth_repeatability import lease_times  # noqa: E402
from suite import WORKLOADS  # noqa: E402

OP_TIMES = ROOT / "benchmarks" / "gpu" / "op_times_h200"
HOST_FILE = ROOT / "maya" / "estimator" / "data" / "h200" / "host_overhead.json"
HOST_SET_BUSY_SHARE = 0.5
"""A workload counts when its GPU is busy for less than this share of its median step."""
PERCENTILES = (10.0, 90.0)


def gpu_busy_ms(name: str) -> float | None:
    """The profiled GPU time of one step of `name` (the per-op self device time summed), None if never profiled."""
    path = OP_TIMES / f"{name}.json"
    if not path.is_file():
        return None
    return sum(op["self_device_us"] for op in json.loads(path.read_text())["per_op"].values()) / 1e3


def host_set_ratios(times: dict[str, list[float]]) -> dict[str, list[float]]:
    """Calibration workload whose step the host sets -> each lease's step time over its median over leases."""
    calibration = {w.name for w in WORKLOADS if not w.held_out}
    out = {}
    for name, steps in sorted(times.items()):
        busy = gpu_busy_ms(name)
        if name not in calibration or busy is None or len(steps) < 2:
            continue
        median = statistics.median(steps)
        if busy < HOST_SET_BUSY_SHARE * median:
            out[name] = [t / median for t in steps]
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--write", action="store_true", help="store the range in maya/estimator/data/h200/host_overhead.json")
    args = p.parse_args()
    times = lease_times()
    ratios = host_set_ratios(times)
    if not ratios:
        raise SystemExit("no calibration workload's step is set by the host: nothing to pool")
    for name, r in ratios.items():
        print(f"{name}: {len(r)} leases, step / median {min(r):.2f}-{max(r):.2f} "
              f"(GPU busy {gpu_busy_ms(name):.2f} ms of a {statistics.median(times[name]):.2f} ms median step)")
    pooled = [x for r in ratios.values() for x in r]
    low, high = (round(float(np.percentile(pooled, q)), 3) for q in PERCENTILES)
    print(f"pooled over {len(pooled)} lease steps: {PERCENTILES[0]:.0f}th percentile {low}, {PERCENTILES[1]:.0f}th {high}")
    if args.write:
        data = json.loads(HOST_FILE.read_text())
        data["host_speed_range"] = [low, high]
        data["host_speed_range_method"] = (
            "python benchmarks/host_speed_range.py --write: the 10th and 90th percentiles of every lease's step "
            f"time over its workload's median over H200 leases, pooled over the calibration workloads whose "
            f"profiled GPU time is under {HOST_SET_BUSY_SHARE:.0%} of that median ({', '.join(ratios)}); "
            "maya.predict multiplies a host-bound prediction's host costs by each.")
        HOST_FILE.write_text(json.dumps(data, indent=2) + "\n")
        print(f"wrote {HOST_FILE}")


if __name__ == "__main__":
    main()
