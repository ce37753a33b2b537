"""Fit the estimator's per-family in-training scale factors (maya/estimator/calibration.py).

    python benchmarks/calibrate.py [--write] [--pairs FAMILY]

For each calibration workload profiled on the H200 (benchmarks/gpu/op_times_h200/, made by
benchmarks/gpu/op_time_probe.py; held-out workloads are refused), it emulates the same iteration,
estimates it without calibration, and pairs the measured GPU time of each aten op with Maya's
estimate of the same op: the trace ops whose kernels the profiler charges to that op's key
(benchmarks/profiler_ops.py: `aten::_to_copy`, `clone` and `contiguous` all launch through
`aten::copy_`), summed. Ops whose CUDA implementation runs sub-ops (`composite_op_extra_us` in
host_overhead.json: embedding backward, index_put, ...) and the loss backward ops that zero-fill
their gradient (`ZERO_FILLED_GRAD_OPS`) are left out: the profiler charges part of their kernels to
the sub-ops. Only ops whose kernel counts agree within 10% are paired, so an op the
emulation runs differently (a cuDNN RNN against its decomposition) cannot skew a family.

The calibrated estimate of one op is `max(factor * estimate - event_overhead_us, kernel_floor_us)`
(maya/estimator/calibration.py): a profile's CUDA events add a few microseconds to every launch
that the profiler's kernel time inside a step does not have. `kernel_floor_us` is the shortest
kernel in benchmarks/gpu/kernel_gap_h200.json. Where the profile has its Chrome trace beside it (`NAME.trace.json.gz`),
an op's measured time is scaled by the union of its kernels' intervals over their sum
(`kernel_overlap`): cuDNN runs an RNN's layers on streams of their own that overlap (the 2-layer
LSTM's backward: 10.3 ms of kernels in 6.2 ms, printed as it runs), and Maya's estimate of an op, timed with CUDA events
around the whole call, is its time on the GPU, not its kernels' sum. For ops on one stream the ratio is 1. For each candidate overhead (0 to 5 us in steps of
0.1 us) a family's factor makes its total calibrated time equal its total measured time across all
paired ops; the overhead kept is the one whose paired kernel time per workload is closest to the
measured one (least mean |error| over workloads). `--write` stores factors and overhead in
maya/estimator/data/h200/models/calibration.json. `--pairs FAMILY` also lists that family's paired
ops (workload, op, calls, measured and uncalibrated estimated us, their ratio).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "validation"))
sys.path.insert(0, str(ROOT / "benchmarks"))
KERNEL_GAP_FILE = ROOT / "benchmarks" / "gpu" / "kernel_gap_h200.json"

ZERO_FILLED_GRAD_OPS = frozenset({"aten::nll_loss_backward", "aten::nll_loss2d_backward"})
"""Loss backward ops whose CUDA implementation zero-fills grad_input before writing one value per row:
the profiler charges that logits-sized fill to `aten::fill_` (hf_bert_bf16: a [16384, 30522] fill_
of 425 us beside nll_loss_backward's own 9.5 us, benchmarks/gpu/session16_h200/s16a/op_shapes), so
their measured self time is not their time and they are left out like the composite ops."""


def _base(op: str) -> str:
    return op.split(".", 1)[0]


def pair_ops(workload: str, ops, per_op: dict, overlap: dict[str, float], composite: set[str]) -> list[tuple]:
    """(workload, profiler key, measured us, estimated us, family, calls) for each op of the H200's
    per-op table that the trace's kernel rows `ops` (duration_us, op) match.

    Every trace op whose kernels the profiler charges to one key (`aten::_to_copy`, `clone` and
    `contiguous` all to `aten::copy_`, benchmarks/profiler_ops.py) is summed under that key. Ops whose
    CUDA implementation runs sub-ops (`composite`: an embedding backward's sort and zero fill,
    index_put's sort) have part of their kernels charged to those sub-ops' keys, so their measured
    time is not theirs: left out. A key pairs only when the call counts agree within 10%.
    """
    from profiler_ops import profiler_key

    from maya.estimator.families import family_of

    ops = ops[~ops.op.map(_base).isin(composite)]
    ops = ops.assign(key=ops.op.map(profiler_key), family=ops.op.map(family_of))
    ours = ops.groupby("key").agg(us=("duration_us", "sum"), n=("op", "size"),
                                  family=("family", lambda f: f.mode().iat[0] if f.notna().any() else None))
    pairs = []
    for key, m in per_op.items():
        if key not in ours.index:
            continue
        o = ours.loc[key]
        if o.family is None or abs(o.n - m["count"]) > 0.1 * m["count"]:
            continue
        pairs.append((workload, key, m["self_device_us"] * overlap.get(key, 1.0), float(o.us), o.family, int(o.n)))
    return pairs


def main() -> None:
    import suite

    import maya.api
    from maya.estimator.estimate import estimate_trace
    from maya.estimator.host_cost import composite_op_extra_us
    from maya.trace import read_rank_trace

    p = argparse.ArgumentParser()
    p.add_argument("--write", action="store_true", help="write maya/estimator/data/h200/models/calibration.json")
    p.add_argument("--pairs", metavar="FAMILY", help="also list this family's paired ops")
    args = p.parse_args()
    used = []
    composite = set(composite_op_extra_us("h200")) | ZERO_FILLED_GRAD_OPS
    for path in sorted((ROOT / "benchmarks" / "gpu" / "op_times_h200").glob("*.json")):
        prof = json.loads(path.read_text())
        w = next(w for w in suite.WORKLOADS if w.name == prof["workload"])
        if w.held_out:
            raise SystemExit(f"{w.name} is held out and must not be used for calibration")
        trace_dir = tempfile.mkdtemp(prefix="maya-calibrate-")
        summary = maya.api.emulate(suite.WORKLOADS_DIR / w.script, prof["argv"], trace_dir=trace_dir)
        if summary.exit_code:
            raise SystemExit(f"{w.name}: emulation failed:\n{summary.error}")
        df = estimate_trace(read_rank_trace(trace_dir, 0), gpu="h200", calibrated=False)
        ops = df[(df.iteration == prof["iteration"]) & (df.kind == "kernel")]
        chrome = path.with_name(f"{w.name}.trace.json.gz")
        overlap = kernel_overlap(chrome) if chrome.is_file() else {}
        for op, ratio in sorted(overlap.items()):
            if ratio < 0.99 and op in prof["per_op"]:
                us = prof["per_op"][op]["self_device_us"]
                print(f"{w.name}: {op}'s kernels overlap: {us / 1e3:.2f} ms of kernels in {us * ratio / 1e3:.2f} ms")
        used += pair_ops(w.name, ops, prof["per_op"], overlap, composite)
        print(f"{w.name}: paired {sum(1 for u in used if u[0] == w.name)} ops", flush=True)
    floor = round(min(row["profiled_kernel_us"] for row in json.loads(KERNEL_GAP_FILE.read_text())["rows"]), 3)
    fits = [_fit(used, overhead / 10, floor) for overhead in range(51)]
    for overhead, scales, error, _ in (fits[0], min(fits, key=lambda fit: fit[2])):
        print(f"event overhead {overhead:.1f} us: mean |error| of a workload's paired kernel time {error:.2%}")
    overhead, scales, _, errors = min(fits, key=lambda fit: fit[2])
    print("  paired kernel time error per workload: " + ", ".join(f"{w} {e:+.1%}" for w, e in errors.items()))
    for f, s in scales.items():
        measured_ms, estimated_ms = (sum(u[i] for u in used if u[4] == f) / 1e3 for i in (2, 3))
        print(f"  {f:12s} measured {measured_ms:8.2f} ms  estimated {estimated_ms:8.2f} ms  factor {s}")
    for workload, op, measured_us, estimated_us, _, calls in (u for u in used if u[4] == args.pairs):
        print(f"  {workload:32s} {op:40s} x{calls:<4d} measured {measured_us:10.1f} us  estimated {estimated_us:10.1f} us"
              f"  measured/estimated {measured_us / estimated_us:.3f}")
    if args.write:
        out = ROOT / "maya" / "estimator" / "data" / "h200" / "models" / "calibration.json"
        out.write_text(json.dumps({
            "family_scale": scales,
            "event_overhead_us": overhead,
            "kernel_floor_us": floor,
            "source": "python benchmarks/calibrate.py --write, from benchmarks/gpu/op_times_h200 (calibration workloads "
                      "only); kernel_floor_us: the shortest profiled kernel in benchmarks/gpu/kernel_gap_h200.json",
            "paired_ops": len(used),
        }, indent=2) + "\n")
        print(f"wrote {out}")


def kernel_overlap(chrome_trace: Path) -> dict[str, float]:
    """Per op name of a profiler Chrome trace, the union of the intervals of the kernels it launched
    over their sum: below 1 where the op's kernels overlap on several streams, 1 on one stream. A
    kernel belongs to the op whose `External id` it carries (not always the op the profiler's self
    device time charges it to, hence a ratio rather than the union itself)."""
    import gzip

    import numpy as np

    from maya.simulator.breakdown import union_length_us

    events = json.loads(gzip.open(chrome_trace).read())["traceEvents"]
    op_of = {e["args"]["External id"]: e["name"] for e in events if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})}
    intervals: dict[str, list[tuple[float, float]]] = collections.defaultdict(list)
    for e in events:
        if e.get("cat") == "kernel" and e["args"].get("External id") in op_of:
            intervals[op_of[e["args"]["External id"]]].append((e["ts"], e["ts"] + e["dur"]))
    ratio = {}
    for name, spans in intervals.items():
        starts, ends = (np.array(column, dtype=np.float64) for column in zip(*spans))
        total = float((ends - starts).sum())
        ratio[name] = union_length_us(starts, ends) / total if total > 0 else 1.0
    return ratio


def _fit(used: list[tuple], overhead: float, floor: float) -> tuple[float, dict[str, float], float, dict[str, float]]:
    """(overhead, family factors, mean |error| over workloads of the calibrated paired kernel time,
    each workload's signed error)
    with every family's factor making its calibrated total equal its measured total; each pair's
    calibrated time is its mean call calibrated as the estimator does (`Calibration.apply`)."""
    import numpy as np

    from maya.estimator.calibration import Calibration

    names, _, measured, estimated, families, calls = (np.array(column) for column in zip(*used))
    measured, estimated, calls = (a.astype(np.float64) for a in (measured, estimated, calls))
    scales = {f: round((measured[families == f].sum() + overhead * calls[families == f].sum())
                       / estimated[families == f].sum(), 4) for f in sorted(set(families))}
    per_call = estimated / calls
    Calibration(family_scale=scales, event_overhead_us=overhead, kernel_floor_us=floor).apply(
        per_call, families, np.ones(len(used), dtype=bool))
    predicted = per_call * calls
    errors = {w: float(predicted[names == w].sum() / measured[names == w].sum() - 1) for w in sorted(set(names))}
    return overhead, scales, float(np.mean(np.abs(list(errors.values())))), errors

if __name__ == "__main__":
    main()
