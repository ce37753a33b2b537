"""Measure how much NCCL kernels slow the compute kernels they overlap, from a real DDP profile.

Reads rank 0's Chrome trace from `benchmarks/gpu/ddp_profile.py` (torch.profiler, CUDA activity) on
several GPUs. For every compute kernel (name and launch grid) that ran both while an NCCL kernel was running and while
none was, the ratio of its mean durations; the median ratio over names is the simulator's
`overlap_slowdown` (maya/simulator/overlap.py). With --write it is stored beside the NCCL fits.

    python benchmarks/overlap_report.py --trace benchmarks/gpu/multi_gpu_h200x2/ddp2_rank0.json.gz --gpu h200 --write
"""

from __future__ import annotations

import argparse
import bisect
import collections
import gzip
import json
import statistics
from pathlib import Path


def overlap_ratios(trace: dict) -> dict[str, float]:
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]
    nccl = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if "nccl" in e["name"].lower())
    starts = [s for s, _ in nccl]
    durations: dict[str, list[list[float]]] = collections.defaultdict(lambda: [[], []])
    for e in events:
        if "nccl" in e["name"].lower():
            continue
        s, t = e["ts"], e["ts"] + e["dur"]
        i = bisect.bisect_left(starts, t)
        overlapped = any(a < t and s < b for a, b in nccl[max(0, i - 8):i])
        # Same kernel and launch grid: the same work, so the durations compare like for like.
        key = f'{e["name"]} grid={e.get("args", {}).get("grid")}'
        durations[key][1 if overlapped else 0].append(e["dur"])
    return {
        name: statistics.mean(over) / statistics.mean(alone)
        for name, (alone, over) in durations.items() if alone and over
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trace", type=Path, required=True)
    p.add_argument("--gpu", default="h200")
    p.add_argument("--write", action="store_true")
    args = p.parse_args()
    text = gzip.decompress(args.trace.read_bytes()) if args.trace.suffix == ".gz" else args.trace.read_bytes()
    ratios = overlap_ratios(json.loads(text))
    slowdown = statistics.median(ratios.values())
    print(f"{len(ratios)} kernel names ran both with and without an NCCL kernel alongside; "
          f"median duration ratio {slowdown:.3f}")
    for name, r in sorted(ratios.items(), key=lambda kv: kv[1]):
        print(f"  {r:6.3f}  {name[:100]}")
    if args.write:
        path = Path(__file__).resolve().parents[1] / "maya" / "estimator" / "data" / args.gpu / "nccl_fits.json"
        data = json.loads(path.read_text())
        data["overlap_slowdown"] = round(slowdown, 3)
        data["overlap_source"] = f"python benchmarks/overlap_report.py --trace {args.trace} --gpu {args.gpu} --write"
        path.write_text(json.dumps(data, indent=2) + "\n")
        print(f"wrote overlap_slowdown={slowdown:.3f} to {path}")


if __name__ == "__main__":
    main()
