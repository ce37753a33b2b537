"""Where the predicted step time of each calibration workload differs from the H200, split into
GPU-kernel time and host time, using the profiled per-op GPU times (benchmarks/gpu/op_times_h200).

    python benchmarks/calibration_report.py [--top N] [--shapes DIR] [NAME ...]
Only workloads that have a profile are reported; held-out workloads never have one. With `--shapes`
(a directory of `op_time_probe.py --shapes` profiles, e.g. benchmarks/gpu/session16_h200/s16a/op_shapes)
the ops are also compared per first input shape, for the workloads profiled there. Ops are joined
on the profiler's key (benchmarks/profiler_ops.py): the trace's `aten::add.Tensor` and `aten::_to_copy`
are the profiler's `aten::add` and `aten::copy_`. The N ops whose times differ most are listed.
"""

from __future__ import annotations

import argparse
import json
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
    from maya.estimator.host_cost import host_costs_us
    from maya.trace import read_rank_trace

    truth = {w["name"]: w for w in json.loads((ROOT / "benchmarks/validation/ground_truth_h200.json").read_text())["workloads"]}
    profiles = sorted((ROOT / "benchmarks/gpu/op_times_h200").glob("*.json"))
    p = argparse.ArgumentParser()
    p.add_argument("--top", type=int, default=8, help="ops listed per workload")
    p.add_argument("--shapes", type=Path, default=None, help="directory of per_op_shape profiles (op_time_probe.py --shapes)")
    p.add_argument("names", nargs="*")
    args = p.parse_args()
    names = args.names or [p.stem for p in profiles]
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
        print(f"{name}: step measured {truth[name]['median_step_ms']:.2f} ms, predicted {pred_ms:.2f}; "
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
        shaped = args.shapes / f"{name}.json" if args.shapes else None
        if shaped and shaped.is_file():
            print(f"  per first input shape ({shaped}):")
            for op, shape, gpu, emu, n_gpu, n_emu in per_shape_rows(kernels, json.loads(shaped.read_text()))[:args.top]:
                print(f"    {op:40s} {shape:22s} gpu {gpu:9.1f} us x{n_gpu:<4d} estimated {emu:9.1f} us x{n_emu}")


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
