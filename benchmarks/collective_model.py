"""Fit Maya's NCCL model to measured collective times and report its error, on fitted and held-out sizes.

Input: `benchmarks/gpu/nccl_bench.py --graph` outputs (GPU time per call replayed from a CUDA graph, no
host in the loop) and `benchmarks/gpu/nccl_algo_probe.py`'s record of NCCL's ring graph and its
protocol choices. For each op and group size of the --measured files, `NvlinkFit`'s five parameters
(Simple latency, efficiency and log slope; LL latency and efficiency; maya/estimator/collective.py)
are fitted by least squares on the relative error over sizes >= 64 KiB, each size priced with the
protocol NCCL's tuning model picks (maya/estimator/nccl_tuning.py). The report gives, at every size
>= 1 MiB: the fitted model's error, a leave-one-size-out error (each size predicted by a fit that never
saw it), and the error on every --held-out file's sizes that are not in the fit.

    python benchmarks/collective_model.py \\
        --measured benchmarks/gpu/multi_gpu_h200x2/nccl_h200x2.json benchmarks/gpu/multi_gpu_h200x4/nccl_h200x4.json \\
        --held-out benchmarks/gpu/multi_gpu_h200x2/nccl_h200x2_dense.json \\
            benchmarks/gpu/multi_gpu_h200x2/nccl_h200x2_dense_repeat.json \\
        --nccl-log benchmarks/gpu/multi_gpu_h200x2/nccl_algo_h200x2.json \\
        --gpu h200 --write --out benchmarks/results/collective_model_h200.md
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

from maya.estimator.collective import CollectiveOp, NvlinkFit, nvlink_fit_duration_us
from maya.estimator.nccl_tuning import NcclGraph, nccl_protocol
from maya.hardware import load_gpu

OPS = {"all_reduce": "all_reduce", "all_gather": "all_gather", "reduce_scatter": "reduce_scatter",
       "broadcast": "broadcast", "all_to_all": "all_to_all", "send_recv": "send"}
FIT_MIN_BYTES = 64 << 10  # below, NCCL also halves the threads of its few channels (topoGetAlgoInfo): not modeled
REPORT_MIN_BYTES = 1 << 20
TARGET = 0.10
# NCCL's log names for the ops of nccl_algo_probe.py; it logs all_gather / reduce_scatter per rank.
LOGGED_OPS = {"AllReduce": ("all_reduce", False), "AllGather": ("all_gather", True),
              "ReduceScatter": ("reduce_scatter", True), "Broadcast": ("broadcast", False)}


def nccl_graph(probe: dict) -> NcclGraph:
    """NCCL's ring graph from nccl_algo_probe.py's copy of the NCCL_DEBUG=INFO log."""
    log = "\n".join(probe["tuning_log"])
    ring = re.search(r"Pattern 4, crossNic \d+, nChannels (\d+), bw ([\d.]+)/[\d.]+, .*sameChannels (\d)", log)
    channels = re.search(r"(\d+) coll channels, .* (\d+) p2p channels per peer", log)
    return NcclGraph(ring_channels=int(ring[1]), ring_channel_bandwidth_GBps=float(ring[2]),
                     ring_same_channels=ring[3] == "1", coll_channels=int(channels[1]),
                     p2p_channels_per_peer=int(channels[2]))


def fit(op: str, sizes: np.ndarray, times_us: np.ndarray, n: int, nvlink: float, graph: NcclGraph) -> NvlinkFit:
    canonical = CollectiveOp(op)

    def make(p) -> NvlinkFit:
        return NvlinkFit(op=op, latency_us=float(p[0]), efficiency=float(p[1]), log_slope=float(p[2]),
                         ll_latency_us=float(p[3]), ll_efficiency=float(p[4]), ranks=n)

    def residual(p):
        f = make(p)
        return np.array([nvlink_fit_duration_us(f, canonical, int(s), n, nvlink, graph) for s in sizes]) / times_us - 1

    r = least_squares(residual, [20.0, 0.7, 0.05, 12.0, 0.3], bounds=([0.0, 0.05, 0.0, 0.0, 0.01], [200.0, 1.0, 0.5, 200.0, 1.0]))
    return make(r.x)


def rows_of(data: dict, bench_op: str, min_bytes: int) -> list[dict]:
    return sorted((r for r in data["rows"] if r["op"] == bench_op and r["size_bytes"] >= min_bytes and r.get("graph_us")),
                  key=lambda r: r["size_bytes"])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--measured", type=Path, nargs="+", required=True, help="nccl_bench.py outputs to fit, one per group size")
    p.add_argument("--held-out", type=Path, nargs="*", default=[], help="nccl_bench.py outputs only to check against")
    p.add_argument("--nccl-log", type=Path, required=True, help="nccl_algo_probe.py output: NCCL's ring graph and choices")
    p.add_argument("--gpu", default="h200")
    p.add_argument("--write", action="store_true", help="write maya/estimator/data/<gpu>/nccl_fits.json")
    p.add_argument("--out", type=Path, help="write the Markdown report here")
    args = p.parse_args()
    nvlink = load_gpu(args.gpu).nvlink_bandwidth_bytes_per_s
    probe = json.loads(args.nccl_log.read_text())
    graph = nccl_graph(probe)
    measured = [json.loads(m.read_text()) for m in args.measured]
    held_out = [json.loads(m.read_text()) for m in args.held_out]
    fits, lines, errors = [], [], {}
    for data in measured:
        _fit_file(data, nvlink, graph, fits, lines, errors)
    held_lines = [line for data, path in zip(held_out, args.held_out) for line in
                  _check_file(data, path.name, measured, fits, nvlink, graph, errors)]
    for fastest in _fastest_runs(held_out):  # a run's outliers are slow ones: each size against its fastest run too
        _check_file(fastest, "fastest of the held-out runs", measured, fits, nvlink, graph, errors)
    report = _report(args, probe, graph, measured, held_out, lines, held_lines, errors, _protocol_check(probe, graph))
    print("\n".join(report))
    if args.out:
        args.out.write_text("\n".join(report) + "\n")
    if args.write:
        _write(args, graph, measured, fits)


def _fit_file(data: dict, nvlink: float, graph: NcclGraph, fits: list, lines: list, errors: dict) -> None:
    n = int(data["gpus"])
    for bench_op, op in OPS.items():
        rows = rows_of(data, bench_op, FIT_MIN_BYTES)
        if len(rows) < 6:
            continue
        sizes = np.array([r["size_bytes"] for r in rows], float)
        times = np.array([r["graph_us"] for r in rows], float)
        f = fit(op, sizes, times, n, nvlink, graph)
        fits.append(f)
        for i, r in enumerate(rows):
            if r["size_bytes"] < REPORT_MIN_BYTES:
                continue
            size = r["size_bytes"]
            keep = np.arange(len(rows)) != i
            loo = fit(op, sizes[keep], times[keep], n, nvlink, graph)
            predicted = nvlink_fit_duration_us(f, CollectiveOp(op), size, n, nvlink, graph)
            predicted_loo = nvlink_fit_duration_us(loo, CollectiveOp(op), size, n, nvlink, graph)
            e, e_loo = predicted / times[i] - 1, predicted_loo / times[i] - 1
            label = f"{bench_op} {size / 2**20:g} MiB"
            errors.setdefault((n, "fitted"), []).append((abs(e), f"{label} {e:+.1%}"))
            errors.setdefault((n, "left out"), []).append((abs(e_loo), f"{label} {e_loo:+.1%}"))
            protocol = nccl_protocol(CollectiveOp(op), size, n, graph).value
            lines.append(f"| {n} | {bench_op} | {size / 2**20:g} MiB | {protocol} | {times[i]:.1f} | {predicted:.1f} "
                         f"| {e:+.1%} | {e_loo:+.1%} |")


def _check_file(data: dict, name: str, measured: list[dict], fits: list, nvlink: float, graph: NcclGraph,
                errors: dict) -> list[str]:
    """Rows of a held-out file at sizes >= 1 MiB that its group size's fit never saw."""
    n = int(data["gpus"])
    fitted_sizes = {r["size_bytes"] for d in measured if int(d["gpus"]) == n for r in d["rows"]}
    lines = []
    for bench_op, op in OPS.items():
        f = next((f for f in fits if f.op == op and f.ranks == n), None)
        for r in rows_of(data, bench_op, REPORT_MIN_BYTES) if f else []:
            size = r["size_bytes"]
            if size in fitted_sizes:
                continue
            predicted = nvlink_fit_duration_us(f, CollectiveOp(op), size, n, nvlink, graph)
            e = predicted / r["graph_us"] - 1
            errors.setdefault((n, name), []).append((abs(e), f"{bench_op} {size / 2**20:g} MiB {e:+.1%}"))
            protocol = nccl_protocol(CollectiveOp(op), size, n, graph).value
            lines.append(f"| {name} | {n} | {bench_op} | {size / 2**20:g} MiB | {protocol} | {r['graph_us']:.1f} "
                         f"| {predicted:.1f} | {e:+.1%} |")
    return lines


def _fastest_runs(runs: list[dict]) -> list[dict]:
    """Per group size with several runs, one run made of each (op, size)'s fastest time among them."""
    merged = []
    for n in sorted({int(d["gpus"]) for d in runs}):
        same = [d for d in runs if int(d["gpus"]) == n]
        if len(same) < 2:
            continue
        times = [{(r["op"], r["size_bytes"]): r["graph_us"] for r in d["rows"] if r.get("graph_us")} for d in same]
        common = set.intersection(*(set(t) for t in times))
        merged.append({"gpus": n, "rows": [{"op": op, "size_bytes": size, "graph_us": min(t[(op, size)] for t in times)}
                                           for op, size in sorted(common)]})
    return merged


def _protocol_check(probe: dict, graph: NcclGraph) -> tuple[int, int]:
    """How many of NCCL's logged protocol choices the tuning model reproduces, of how many."""
    n, same = int(probe["gpus"]), 0
    for choice in probe["choices"]:
        op, per_rank = LOGGED_OPS[choice["op"]]
        size = choice["size_bytes"] * (n if per_rank else 1)
        same += nccl_protocol(CollectiveOp(op), size, n, graph).value.upper() == choice["protocol"]
    return same, len(probe["choices"])


def _noise(args, measured: list[dict], held_out: list[dict]) -> list[str]:
    """How far two runs of the same op, size and group size (>= 1 MiB) are apart: the floor under any error."""
    runs = list(zip([*args.measured, *args.held_out], [*measured, *held_out]))
    lines = []
    for i, (path_a, a) in enumerate(runs):
        for path_b, b in runs[i + 1:]:
            times_a = {(r["op"], r["size_bytes"]): r["graph_us"] for r in a["rows"] if r.get("graph_us")}
            gaps = [max(t, r["graph_us"]) / min(t, r["graph_us"]) - 1 for r in b["rows"]
                    if a["gpus"] == b["gpus"] and r["size_bytes"] >= REPORT_MIN_BYTES and r.get("graph_us")
                    and (t := times_a.get((r["op"], r["size_bytes"])))]
            if gaps:
                lines.append(f"- Run to run, `{path_a.name}` against `{path_b.name}` at their {len(gaps)} common points: "
                             f"slower of the two by a median {statistics.median(gaps):.1%}, max {max(gaps):.1%}.")
    return lines


def _summary(errors: list[tuple[float, str]]) -> str:
    """Median and max |error|, and the points over the target."""
    over = [label for e, label in sorted(errors, reverse=True) if e > TARGET]
    values = [e for e, _ in errors]
    listed = f" ({', '.join(over)})" if over else ""
    return (f"median {statistics.median(values):.1%}, max {max(values):.1%}, "
            f"{len(over)} of {len(errors)} over {TARGET:.0%}{listed}")


def _command(args) -> str:
    held = f" --held-out {' '.join(map(str, args.held_out))}" if args.held_out else ""
    return (f"python benchmarks/collective_model.py --measured {' '.join(map(str, args.measured))}{held} "
            f"--nccl-log {args.nccl_log} --gpu {args.gpu} --write --out {args.out}")


def _report(args, probe, graph, measured, held_out, lines, held_lines, errors, protocol_check) -> list[str]:
    first = measured[0]
    summary = []
    for n in sorted({int(d["gpus"]) for d in measured}):
        summary.append(f"- {n} GPUs, fitted sizes: {_summary(errors[(n, 'fitted')])}; "
                       f"each size left out of its fit: {_summary(errors[(n, 'left out')])}.")
    for name in [p.name for p in args.held_out] + ["fastest of the held-out runs"]:
        for n in sorted({int(d["gpus"]) for d in held_out}):
            if (n, name) in errors:
                summary.append(f"- {n} GPUs, held-out sizes, {name}: {_summary(errors[(n, name)])}.")
    summary += _noise(args, measured, held_out)
    same, logged = protocol_check
    return [
        f"# NCCL model against {', '.join(str(d['gpus']) for d in measured)} x {first['gpu']} "
        f"(NCCL {first.get('nccl')}, torch {first['torch']})",
        "",
        *[f"- Fitted: {d['gpus']} GPUs measured with `{d['command']}` (`--graph`: GPU time per call, from a CUDA graph) "
          f"on {d['date']}." for d in measured],
        *[f"- Held out (never fitted): {d['gpus']} GPUs measured with `{d['command']}` on {d['date']}." for d in held_out],
        f"- NCCL's ring graph and choices: `{probe['command']}` on {probe['date']}: {graph.ring_channels} ring channels "
        f"of {graph.ring_channel_bandwidth_GBps:g} GB/s, {graph.coll_channels} collective channels, logged on {probe['gpus']} GPUs "
        f"(other group sizes are assumed to get the same graph: each GPU has the same NVLink budget; none was logged). "
        f"The model's protocol (maya/estimator/nccl_tuning.py, NCCL's own tuning model) matches NCCL's logged choice "
        f"for {same} of {logged} calls.",
        f"- Fitted and reported by `{_command(args)}`.",
        "- Model (maya/estimator/collective.py `NvlinkFit`): per op and group size, the protocol NCCL picks, priced "
        "with that protocol's latency and bandwidth (Simple: latency, efficiency, log slope; LL: latency, efficiency; "
        "LL128: priced as Simple), fitted over sizes >= 64 KiB of the fitted files only.",
        "",
        "## Summary, sizes >= 1 MiB",
        "",
        *summary,
        "",
        "## Fitted sizes",
        "",
        "| GPUs | op | size | NCCL protocol | measured us | model us | error | error, size left out of the fit |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
        *lines,
        "",
        "## Held-out sizes",
        "",
        "| file | GPUs | op | size | NCCL protocol | measured us | model us | error |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
        *held_lines,
    ]


def _write(args, graph: NcclGraph, measured: list[dict], fits: list[NvlinkFit]) -> None:
    path = Path(__file__).resolve().parents[1] / "maya" / "estimator" / "data" / args.gpu / "nccl_fits.json"
    kept = json.loads(path.read_text()) if path.exists() else {}  # overlap_report.py writes here too
    path.write_text(json.dumps({
        **kept,
        "source": [str(m) for m in args.measured],
        "command": _command(args),
        "measured_on": [f"{d['gpus']} x {d['gpu']}, NCCL {d.get('nccl')}, {d['date']}" for d in measured],
        "nccl_graph": {"ring_channels": graph.ring_channels, "ring_channel_bandwidth_GBps": graph.ring_channel_bandwidth_GBps,
                       "ring_same_channels": graph.ring_same_channels, "coll_channels": graph.coll_channels,
                       "p2p_channels_per_peer": graph.p2p_channels_per_peer},
        "fits": [{"op": f.op, "latency_us": round(f.latency_us, 3), "efficiency": round(f.efficiency, 4),
                  "log_slope": round(f.log_slope, 4), "ll_latency_us": round(f.ll_latency_us, 3),
                  "ll_efficiency": round(f.ll_efficiency, 4), "ranks": f.ranks} for f in fits],
    }, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
