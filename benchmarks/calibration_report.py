"""Where the predicted step time of each calibration workload differs from the H200, split into
GPU-kernel time and host time, using the profiled per-op GPU times (benchmarks/gpu/op_times_h200).

    python benchmarks/calibration_report.py [--top N] [--shapes DIR [--shapes DIR2 ...]] [--bands FAMILY] [NAME ...]
Only workloads that have a profile are reported; held-out workloads never have one. With `--shapes`
(a directory of `op_time_probe.py --shapes` profiles, e.g. benchmarks/gpu/session16_h200/s16a/op_shapes)
the ops are also compared per first input shape, for the workloads profiled there (the first
`--shapes` directory that has a workload's file); `--bands FAMILY` then sums that family's per-shape pairs (those whose
call counts agree) over all the workloads by the first input's element count, measured against
estimated per band (an op's in-training time against its L2-flushed profile, by size). Ops are joined
on the profiler's key (benchmarks/profiler_ops.py): the trace's `aten::add.Tensor` and `aten::_to_copy`
are the profiler's `aten::add` and `aten::copy_`. The N ops whose times differ most are listed.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "validation"))
sys.path.insert(0, str(ROOT / "benchmarks"))


def main() -> None:
    import suite
    from profiler_ops import profiler_key

    import maya.api
    from maya.estimator.estimate import estimate_trace
    from maya.estimator.families import family_of
    from maya.estimator.host_cost import host_costs_us
    from maya.trace import read_rank_trace

    truth = {w["name"]: w for w in json.loads((ROOT / "benchmarks/validation/ground_truth_h200.json").read_text())["workloads"]}
    profiles = sorted((ROOT / "benchmarks/gpu/op_times_h200").glob("*.json"))
    p = argparse.ArgumentParser()
    p.add_argument("--top", type=int, default=8, help="ops listed per workload")
    p.add_argument("--shapes", type=Path, action="append", default=[],
                   help="directory of per_op_shape profiles (op_time_probe.py --shapes); repeat for more")
    p.add_argument("--bands", metavar="FAMILY", help="with --shapes: that family's per-shape pairs by element count")
    p.add_argument("names", nargs="*")
    args = p.parse_args()
    if args.bands and not args.shapes:
        p.error("--bands needs --shapes")
    names = args.names or [p.stem for p in profiles]
    banded = []  # (first input's element count, measured us, estimated us) of --bands FAMILY's pairs
    for name in names:
        prof = json.loads((ROOT / "benchmarks/gpu/op_times_h200" / f"{name}.json").read_text())
        w = next(w for w in suite.WORKLOADS if w.name == name)
        trace_dir = tempfile.mkdtemp(prefix="maya-cal-")
        s = maya.api.emulate(suite.WORKLOADS_DIR / w.script, prof["argv"], trace_dir=trace_dir)
        df = estimate_trace(read_rank_trace(trace_dir, 0), gpu="h200")
        df["host_us"] = host_costs_us(df)
        it = df[df.iteration == prof["iteration"]]
        kernels = it[it.kind.isin(["kernel", "memcpy"])]
        pred_ms = next(i.time_ms for i in s.iterations if i.index == prof["iteration"])
        # The sum of per-op GPU times, not `kernel_busy_ms`: profiles made before op_time_probe.py
        # dropped gpu_user_annotation ranges count those ranges as busy time.
        busy_ms = sum(v["self_device_us"] for v in prof["per_op"].values()) / 1e3
        # The prediction is of the profiled iteration, which may follow a logging sync (a host-bound
        # step after one is predicted slower than the steady median validate.py scores).
        print(f"{name}: step measured {truth[name]['median_step_ms']:.2f} ms (the first lease's median), "
              f"predicted {pred_ms:.2f} for the profiled iteration {prof['iteration']}; "
              f"GPU busy measured {busy_ms:.2f}, estimated {kernels.duration_us.sum() / 1e3:.2f}; "
              f"host estimated {it.host_us.sum() / 1e3:.2f} ms for {len(kernels)} ops ({prof['kernels']} kernels)")
        est = kernels.assign(key=kernels.op.map(profiler_key)).groupby("key").duration_us.agg(["sum", "count"])
        rows = []
        for op in set(prof["per_op"]) | set(est.index):
            m = prof["per_op"].get(op, {"self_device_us": 0.0, "count": 0})
            e = est.loc[op] if op in est.index else {"sum": 0.0, "count": 0}
            rows.append((op, m["self_device_us"], e["sum"], m["count"], int(e["count"])))
        for op, gpu, emu, n_gpu, n_emu in sorted(rows, key=lambda r: -abs(r[1] - r[2]))[:args.top]:
            print(f"    {op:50s} gpu {gpu / 1e3:7.2f} ms x{n_gpu:<5d} estimated {emu / 1e3:7.2f} ms x{n_emu}")
        shaped = next((d / f"{name}.json" for d in args.shapes if (d / f"{name}.json").is_file()), None)
        if shaped:
            print(f"  per first input shape ({shaped}):")
            shape_rows = per_shape_rows(kernels, json.loads(shaped.read_text()))
            for op, shape, gpu, emu, n_gpu, n_emu in shape_rows[:args.top]:
                print(f"    {op:40s} {shape:22s} gpu {gpu:9.1f} us x{n_gpu:<4d} estimated {emu:9.1f} us x{n_emu}")
            if args.bands:
                banded += [(math.prod(json.loads(shape)), gpu, emu) for op, shape, gpu, emu, n_gpu, n_emu in shape_rows
                           if family_of(op) == args.bands and n_gpu == n_emu and gpu > 0 and emu > 0]
    if args.bands:
        print_bands(args.bands, banded)


BAND_EDGES = (0, 2**18, 2**21, 2**23, 2**24, 2**25, math.inf)
"""Element-count bands of `--bands`: in bf16, 0.5 MiB, 4 MiB, 16 MiB, 32 MiB and 64 MiB (an H200's L2 is 60 MiB)."""


def print_bands(family: str, pairs: list[tuple]) -> None:
    """Measured / estimated time of `family`'s per-shape pairs per element-count band."""
    total = sum(gpu for _, gpu, _ in pairs)
    print(f"{family}: per-shape pairs by the first input's element count ({len(pairs)} pairs, {total / 1e3:.1f} ms measured)")
    for lo, hi in zip(BAND_EDGES, BAND_EDGES[1:]):
        band = [(gpu, emu) for n, gpu, emu in pairs if lo <= n < hi]
        if band:
            gpu, emu = sum(g for g, _ in band), sum(e for _, e in band)
            print(f"  [{lo:>10}, {hi:>10}) elements: {len(band):3d} pairs, {gpu / 1e3:7.2f} ms measured "
                  f"({gpu / total:5.1%} of the time), measured / estimated {gpu / emu:.3f}")


def per_shape_rows(kernels, profile: dict) -> list[tuple]:
    """(profiler key, first input shape, measured us, estimated us, measured calls, estimated calls) of
    every op and first input shape in the profile's `per_op_shape` or the trace rows `kernels`, the
    largest differences first."""
    from profiler_ops import profiler_key

    def first(shapes) -> str:
        return str([int(d) for d in shapes[0]]) if len(shapes) else "[]"

    totals: dict[tuple, list] = {}
    for entry in profile["per_op_shape"]:
        t = totals.setdefault((entry["op"], first(entry["input_shapes"])), [0.0, 0.0, 0, 0])
        t[0] += entry["self_device_us"]
        t[2] += entry["count"]
    for op, shapes, us in zip(kernels.op, kernels.input_shapes, kernels.duration_us):
        t = totals.setdefault((profiler_key(op), first(shapes)), [0.0, 0.0, 0, 0])
        t[1] += us
        t[3] += 1
    rows = [(op, shape, *t) for (op, shape), t in totals.items()]
    return sorted(rows, key=lambda r: -abs(r[2] - r[3]))


if __name__ == "__main__":
    main()
