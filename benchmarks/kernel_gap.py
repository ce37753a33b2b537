"""The GPU's gap between back-to-back kernels on one stream, from real H200 profiler traces.

When the host runs ahead, a stream's next kernel is queued before the current one ends, and still
starts about a microsecond after it (the front end fetches and sets up the next launch). Maya's
per-op estimates are kernel durations (the profiler's, after in-training calibration), so without
this gap a GPU-bound step of thousands of kernels comes out short.

For each calibration workload with a Chrome trace in benchmarks/gpu/op_times_h200/ (made by
benchmarks/gpu/op_time_probe.py; held-out workloads are refused), this pairs every kernel with the
next one on its stream, keeps the pairs whose second kernel's launch call returned at least 5 us
before the first kernel ended (so the gap is the GPU's, not the host's), and reports their mean
(a step's time adds up the gaps, so the mean, not the median, is what it loses). The figure Maya
uses is the median over workloads of those means, less what the profiler itself adds to a gap:
benchmarks/gpu/kernel_gap_probe.py timed queued chains of one elementwise kernel with CUDA events
and under the profiler on the same H200 (benchmarks/gpu/kernel_gap_h200.json), and the median
difference between the two is subtracted.

    python benchmarks/kernel_gap.py            # print per workload and the figure
    python benchmarks/kernel_gap.py --write    # also store it as kernel_gap_us in host_overhead.json

A CUDA graph's replay launches its kernels from the GPU's side, and the gap between them is shorter.
The probe also times a chain captured in a graph and replayed; `--graph` takes the median over the
given probe files of their median graph gap (no profiler is involved, so nothing is subtracted):

    python benchmarks/kernel_gap.py --graph benchmarks/gpu/session45/s45_h100/kernel_gap*.json --write
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "validation"))
TRACES = ROOT / "benchmarks" / "gpu" / "op_times_h200"
HOST_OVERHEAD = ROOT / "maya" / "estimator" / "data" / "h200" / "host_overhead.json"
PROBE = ROOT / "benchmarks" / "gpu" / "kernel_gap_h200.json"
QUEUED_MARGIN_US = 5.0
"""A kernel counts as queued when its launch call returned this long before the previous kernel ended."""


def queued_gaps_us(trace_path: Path) -> list[float]:
    """Gaps (us) between consecutive kernels of one stream where the second was already queued."""
    events = json.load(gzip.open(trace_path))
    events = events["traceEvents"] if isinstance(events, dict) else events
    kernels = sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    launches = {e["args"].get("correlation"): e for e in events
                if e.get("cat") == "cuda_runtime" and "Launch" in e.get("name", "")}
    by_stream: dict = {}
    for k in kernels:
        by_stream.setdefault(k["args"].get("stream"), []).append(k)
    gaps = []
    for stream_kernels in by_stream.values():
        for a, b in zip(stream_kernels, stream_kernels[1:]):
            launch = launches.get(b["args"].get("correlation"))
            a_end = a["ts"] + a["dur"]
            if launch is not None and launch["ts"] + launch["dur"] < a_end - QUEUED_MARGIN_US:
                gaps.append(b["ts"] - a_end)
    return gaps


def main() -> None:
    import suite

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--write", action="store_true", help="store the figure as kernel_gap_us in host_overhead.json")
    p.add_argument("--graph", nargs="+", type=Path, metavar="PROBE_JSON",
                   help="instead, the gap between a CUDA graph's kernels from these kernel_gap_probe.py files "
                        "(stored as graph_kernel_gap_us)")
    args = p.parse_args()
    if args.graph:
        graph_gap(args.graph, args.write)
        return
    held_out = {w.name for w in suite.WORKLOADS if w.held_out}
    means = {}
    for path in sorted(TRACES.glob("*.trace.json.gz")):
        name = path.name.removesuffix(".trace.json.gz")
        if name in held_out:
            raise SystemExit(f"{name} is held out and must not be used for calibration")
        gaps = queued_gaps_us(path)
        if len(gaps) < 50:
            print(f"{name}: {len(gaps)} queued pairs, too few; skipped")
            continue
        means[name] = statistics.mean(gaps)
        q1, median, q3 = statistics.quantiles(gaps, n=4)
        print(f"{name}: {len(gaps)} queued pairs, mean {means[name]:.2f} us (quartiles {q1:.2f}, {median:.2f}, {q3:.2f})")
    in_traces = statistics.median(means.values())
    probe = json.loads(PROBE.read_text())
    inflation = statistics.median(r["gap_under_profiler_us"] - r["gap_us"] for r in probe["rows"])
    figure = in_traces - inflation
    print(f"median over {len(means)} workloads of the mean gap: {in_traces:.2f} us; the profiler adds {inflation:.2f} us "
          f"({PROBE.relative_to(ROOT)}); kernel_gap_us = {figure:.2f}")
    if args.write:
        data = json.loads(HOST_OVERHEAD.read_text())
        data["kernel_gap_us"] = round(figure, 3)
        data["kernel_gap_method"] = (
            "python benchmarks/kernel_gap.py --write: median over calibration workloads of the mean gap between "
            "back-to-back kernels of one stream whose second kernel was queued (its launch returned >= 5 us before the "
            f"first ended), from the profiler traces in benchmarks/gpu/op_times_h200 ({', '.join(sorted(means))}): "
            f"{in_traces:.3f} us, less the {inflation:.3f} us the profiler adds to a gap (median over the rows of "
            "benchmarks/gpu/kernel_gap_h200.json: queued chains of one elementwise kernel timed with CUDA events and under "
            "the profiler, python benchmarks/gpu/kernel_gap_probe.py, H200, torch 2.11.0+cu130)"
        )
        HOST_OVERHEAD.write_text(json.dumps(data, indent=2) + "\n")


def graph_gap(paths: list[Path], write: bool) -> None:
    """The median over probe files of their median gap between a replayed graph's kernels."""
    probes = [json.loads(p.read_text()) for p in sorted(paths)]
    for path, probe in zip(sorted(paths), probes):
        if "median_graph_gap_us" not in probe:
            raise SystemExit(f"{path}: no median_graph_gap_us (a kernel_gap_probe.py from before session 44)")
        print(f"{path}: {probe['gpu']}, {probe['date']}: median graph gap {probe['median_graph_gap_us']:.3f} us "
              f"(eager {probe['median_gap_us']:.3f} us)")
    figure = statistics.median(p["median_graph_gap_us"] for p in probes)
    gpus = sorted({p["gpu"] for p in probes})
    print(f"graph_kernel_gap_us = {figure:.3f} (median over {len(probes)} probe runs on {', '.join(gpus)})")
    if write:
        names = " ".join(str(p.relative_to(ROOT)) if p.is_absolute() else str(p) for p in sorted(paths))
        data = json.loads(HOST_OVERHEAD.read_text())
        data["graph_kernel_gap_us"] = round(figure, 3)
        data["graph_kernel_gap_method"] = (
            f"python benchmarks/kernel_gap.py --graph {names} --write: the median over those runs of "
            "benchmarks/gpu/kernel_gap_probe.py ({}; torch {}) of each run's median gap between the back-to-back kernels "
            "of a chain of one elementwise kernel captured in a CUDA graph and replayed (per-kernel time of the replay, "
            "CUDA events, less the kernel's profiled time). Not measured on an H200: the H100 has the same GH100 chip."
            .format(", ".join(gpus), ", ".join(sorted({p["torch"] for p in probes}))))
        HOST_OVERHEAD.write_text(json.dumps(data, indent=2) + "\n")


if __name__ == "__main__":
    main()
