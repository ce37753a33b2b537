"""Maya's step time for calibration workloads with one H200 lease's host figures, against that lease.

    python benchmarks/lease_host_check.py --host benchmarks/gpu/session22_h200/s22a/host/host_overhead.json \\
        --ground-truth benchmarks/gpu/host_phase_h200/lease_i/ground_truth.json
    python benchmarks/lease_host_check.py --host benchmarks/gpu/host_phase_h200/lease_c/host_overhead_run1.json \\
        --ground-truth benchmarks/gpu/host_phase_h200/lease_c/ground_truth_part*.json

Host-bound steps move with the lease's CPU by tens of percent
(`benchmarks/results/ground_truth_repeatability_h200.md`), and `maya profile --families host` measures
that CPU's host costs. Each calibration workload the lease's ground truth measured (held-out ones are
skipped: `host_phase_factors.emulated_trace` refuses them) is emulated for 2 warm-up and 2 timed
steps and predicted twice, with the shipped host figures and with the lease file's `per_op_us` in
their place (every other figure, the forward in-situ factor among them, as shipped); the step is the
median of the timed iterations. Only torch, pandas and the project are needed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from host_phase_factors import emulated_trace  # noqa: E402
from suite import WORKLOADS  # noqa: E402

TIMED_FROM = 2
"""Iterations before this are warm-up (`emulated_trace` runs 2 warm-up and 2 timed steps)."""


def predicted_step_ms(trace_dir: Path, per_op_us: dict[str, float] | None) -> float:
    """Median predicted time (ms) of the timed iterations of the rank-0 trace in `trace_dir`."""
    from maya.hardware.cluster import cluster_for_gpu
    from maya.predict import estimate_and_simulate
    from maya.trace import read_rank_trace

    _, result = estimate_and_simulate({0: read_rank_trace(trace_dir, 0)}, "h200", cluster_for_gpu("h200", 1),
                                      host_per_op_us=per_op_us)
    return statistics.median(result.iteration_times_us[TIMED_FROM:]) / 1e3


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", type=Path, required=True, help="a lease's `maya profile --families host` output")
    p.add_argument("--ground-truth", type=Path, nargs="+", required=True,
                   help="that lease's measure_ground_truth.py output (one or more files)")
    args = p.parse_args()
    from maya.estimator.host_cost import read_host_profile

    figures = read_host_profile(args.host)
    held_out = {w.name for w in WORKLOADS if w.held_out}
    truth = {w["name"]: w for path in args.ground_truth for w in json.loads(path.read_text())["workloads"]
             if w.get("ok") and w["name"] not in held_out}
    if not truth:
        sys.exit(f"{' '.join(map(str, args.ground_truth))}: no calibration workload measured ok")
    print(f"Host figures: {args.host}; measured: {' '.join(map(str, args.ground_truth))}\n")
    print("| workload | measured ms | predicted ms, shipped host figures | error | predicted ms, this lease's | error |")
    print("|---|---:|---:|---:|---:|---:|")
    errors: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, w in sorted(truth.items()):
            trace_dir = emulated_trace(name, Path(tmp)).parents[1]
            measured = w["median_step_ms"]
            shipped, lease = predicted_step_ms(trace_dir, None), predicted_step_ms(trace_dir, figures)
            errors.append((abs(shipped / measured - 1), abs(lease / measured - 1)))
            print(f"| {name} | {measured:.2f} | {shipped:.2f} | {shipped / measured - 1:+.1%} | {lease:.2f} "
                  f"| {lease / measured - 1:+.1%} |", flush=True)
    for i, figures_name in enumerate(("shipped host figures", "this lease's")):
        print(f"- {figures_name}: median |error| {statistics.median(e[i] for e in errors):.1%}, "
              f"worst {max(e[i] for e in errors):.1%} over {len(errors)} workloads")


if __name__ == "__main__":
    main()
