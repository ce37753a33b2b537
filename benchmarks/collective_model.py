"""Fit Maya's NCCL model to measured collective times and report its error.

Input: `benchmarks/gpu/nccl_bench.py --graph` output (GPU time per call replayed from a CUDA graph, no
host in the loop). For each op, `NvlinkFit`'s three parameters (latency, NVLink efficiency, log slope;
maya/estimator/collective.py) are fitted by least squares on the relative error over sizes >= 1 MiB.
The report gives the fitted model's error at every measured size >= 1 MiB, and a leave-one-size-out
error (each size predicted by a fit that never saw it), the honest figure for sizes in between.

    python benchmarks/collective_model.py --measured benchmarks/gpu/multi_gpu_h200x2/nccl_h200x2.json \\
        --gpu h200 --write --out benchmarks/results/collective_model_h200.md
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

from maya.estimator.collective import CollectiveOp, NvlinkFit, nvlink_fit_duration_us
from maya.hardware import load_gpu

OPS = {"all_reduce": "all_reduce", "all_gather": "all_gather", "reduce_scatter": "reduce_scatter",
       "broadcast": "broadcast", "all_to_all": "all_to_all", "send_recv": "send"}
MIN_BYTES = 1 << 20


def fit(op: str, sizes: np.ndarray, times_us: np.ndarray, n: int, nvlink: float) -> NvlinkFit:
    canonical = CollectiveOp(op)

    def residual(p):
        f = NvlinkFit(op=op, latency_us=p[0], efficiency=p[1], log_slope=p[2], ranks=n)
        return np.array([nvlink_fit_duration_us(f, canonical, int(s), n, nvlink) for s in sizes]) / times_us - 1

    r = least_squares(residual, [10.0, 0.7, 0.0], bounds=([0.0, 0.05, -0.5], [200.0, 1.0, 0.5]))
    return NvlinkFit(op=op, latency_us=float(r.x[0]), efficiency=float(r.x[1]), log_slope=float(r.x[2]), ranks=n)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--measured", type=Path, nargs="+", required=True, help="one nccl_bench.py output per group size")
    p.add_argument("--gpu", default="h200")
    p.add_argument("--write", action="store_true", help="write maya/estimator/data/<gpu>/nccl_fits.json")
    p.add_argument("--out", type=Path, help="write the Markdown report here")
    args = p.parse_args()
    nvlink = load_gpu(args.gpu).nvlink_bandwidth_bytes_per_s
    fits, lines, in_sample, held_out, sources = [], [], [], [], []
    for measured in args.measured:
        data = json.loads(measured.read_text())
        sources.append(data)
        _fit_file(data, nvlink, fits, lines, in_sample, held_out)
    _report_and_write(args, sources, fits, lines, in_sample, held_out)


def _fit_file(data: dict, nvlink: float, fits: list, lines: list, in_sample: list, held_out: list) -> None:
    n = int(data["gpus"])
    for bench_op, op in OPS.items():
        rows = sorted((r for r in data["rows"] if r["op"] == bench_op and r["size_bytes"] >= MIN_BYTES and r.get("graph_us")),
                      key=lambda r: r["size_bytes"])
        if len(rows) < 4:
            continue
        sizes = np.array([r["size_bytes"] for r in rows], float)
        times = np.array([r["graph_us"] for r in rows], float)
        f = fit(op, sizes, times, n, nvlink)
        fits.append(f)
        for i, r in enumerate(rows):
            predicted = nvlink_fit_duration_us(f, CollectiveOp(op), int(sizes[i]), n, nvlink)
            keep = np.arange(len(rows)) != i
            loo = fit(op, sizes[keep], times[keep], n, nvlink)
            predicted_loo = nvlink_fit_duration_us(loo, CollectiveOp(op), int(sizes[i]), n, nvlink)
            e, e_loo = predicted / times[i] - 1, predicted_loo / times[i] - 1
            in_sample.append(abs(e))
            held_out.append(abs(e_loo))
            lines.append(f"| {n} | {bench_op} | {int(sizes[i]) >> 20} MiB | {times[i]:.1f} | {predicted:.1f} | {e:+.1%} | {e_loo:+.1%} |")


def _report_and_write(args, sources: list[dict], fits: list, lines: list, in_sample: list, held_out: list) -> None:
    files = " ".join(str(m) for m in args.measured)
    report = [
        f"# NCCL model against {', '.join(str(d['gpus']) for d in sources)} x {sources[0]['gpu']} "
        f"(NCCL {sources[0].get('nccl')}, torch {sources[0]['torch']})",
        "",
        *[f"- {d['gpus']} GPUs: measured with `{d['command']}` (`--graph`: GPU time per call, from a CUDA graph) on {d['date']}."
          for d in sources],
        f"- Fitted and reported by `python benchmarks/collective_model.py --measured {files} --gpu {args.gpu} --write`.",
        "",
        "| GPUs | op | size | measured us | model us | error | error, size left out of the fit |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        *lines,
        "",
        f"Sizes >= 1 MiB: median |error| {statistics.median(in_sample):.1%} (max {max(in_sample):.1%}); "
        f"with each size left out of its fit: median {statistics.median(held_out):.1%} (max {max(held_out):.1%}).",
    ]
    print("\n".join(report))
    if args.out:
        args.out.write_text("\n".join(report) + "\n")
    if args.write:
        path = Path(__file__).resolve().parents[1] / "maya" / "estimator" / "data" / args.gpu / "nccl_fits.json"
        kept = json.loads(path.read_text()) if path.exists() else {}  # overlap_report.py writes here too
        path.write_text(json.dumps({
            **kept,
            "source": [str(m) for m in args.measured],
            "command": f"python benchmarks/collective_model.py --measured {files} --gpu {args.gpu} --write",
            "measured_on": [f"{d['gpus']} x {d['gpu']}, NCCL {d.get('nccl')}, {d['date']}" for d in sources],
            "fits": [{"op": f.op, "latency_us": round(f.latency_us, 3), "efficiency": round(f.efficiency, 4),
                      "log_slope": round(f.log_slope, 4), "ranks": f.ranks} for f in fits],
        }, indent=2) + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
