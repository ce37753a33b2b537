"""The GPU's gap between back-to-back queued kernels, measured without the profiler in the timed runs.

For each element count, N launches of `x.mul_(1.0001)` are queued behind a `torch.cuda._sleep`
long enough that the host finishes launching before the first one starts; CUDA events around the N
kernels give (duration + gap) per kernel. The same kernel's duration alone is then read from a
separate torch.profiler run (CUPTI kernel records), and the gap is the difference. The same queued
chain is also profiled, to see the gap as the profiler records it. This checks
benchmarks/kernel_gap.py, which reads the gap from profiled training steps. Last, the same N launches
are captured in a CUDA graph and one replay is timed with CUDA events: the gap between a graph's
kernels (`graph_gap_us`), which the graph's one launch queues at once.

    python benchmarks/gpu/kernel_gap_probe.py --out kernel_gap_h200.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import torch

LAUNCHES = 400
"""Kernels per timed chain: below CUDA's queue of pending launches (about 1,000), which would make the
host wait and the chain host-bound (a first run with 2,000 read 3.4-6.4 us for sub-microsecond kernels)."""
SIZES = (1 << 10, 1 << 16, 1 << 18, 1 << 20, 1 << 21, 1 << 22, 1 << 23, 1 << 24)


def queued_per_kernel_us(x: torch.Tensor, launches: int) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    torch.cuda._sleep(50_000_000)  # ~25 ms of GPU time: every launch below is queued before it ends
    start.record()
    for _ in range(launches):
        x.mul_(1.0001)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1000.0 / launches


def profiled_kernel_us(x: torch.Tensor, launches: int) -> float:
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(launches):
            x.mul_(1.0001)
        torch.cuda.synchronize()
    durations = [e.device_time for e in prof.events() if e.device_time > 0 and "mul" in e.name.lower()]
    return statistics.median(durations)


def profiled_queued_gap_us(x: torch.Tensor, launches: int, trace_path: str) -> float:
    """The median gap between the queued kernels of one chain as the profiler (CUPTI) records it."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA, torch.profiler.ProfilerActivity.CPU]) as prof:
        torch.cuda._sleep(50_000_000)
        for _ in range(launches):
            x.mul_(1.0001)
        torch.cuda.synchronize()
    prof.export_chrome_trace(trace_path)
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    kernels = sorted((e for e in events if e.get("cat") == "kernel" and "mul" in e.get("name", "").lower()), key=lambda e: e["ts"])
    return statistics.median(b["ts"] - (a["ts"] + a["dur"]) for a, b in zip(kernels, kernels[1:]))


def graph_per_kernel_us(x: torch.Tensor, launches: int) -> float:
    """(duration + gap) per kernel of `launches` `mul_` kernels replayed from one CUDA graph (median of 9)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        x.mul_(1.0001)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(launches):
            x.mul_(1.0001)
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(9):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1000.0 / launches)
    return statistics.median(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    args = p.parse_args()
    rows = []
    for n in SIZES:
        x = torch.ones(n, device="cuda")
        for _ in range(3):
            queued_per_kernel_us(x, 200)
        queued = statistics.median(queued_per_kernel_us(x, LAUNCHES) for _ in range(9))
        kernel = profiled_kernel_us(x, 500)
        under_profiler = profiled_queued_gap_us(x, LAUNCHES, args.out + ".trace.tmp.json")
        graph = graph_per_kernel_us(x, LAUNCHES)
        rows.append({"elements": n, "queued_per_kernel_us": queued, "profiled_kernel_us": kernel,
                     "gap_us": queued - kernel, "gap_under_profiler_us": under_profiler,
                     "graph_per_kernel_us": graph, "graph_gap_us": graph - kernel})
        print(json.dumps(rows[-1]), flush=True)
    result = {
        "command": " ".join(["python", *sys.argv]),
        "gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "launches": LAUNCHES, "rows": rows,
        "median_gap_us": statistics.median(r["gap_us"] for r in rows),
        "median_gap_under_profiler_us": statistics.median(r["gap_under_profiler_us"] for r in rows),
        "median_graph_gap_us": statistics.median(r["graph_gap_us"] for r in rows),
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
