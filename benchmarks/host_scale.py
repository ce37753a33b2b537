"""One multiplier of the shipped host figures, fitted on the calibration workloads' steps over the H200 leases.

    python benchmarks/host_scale.py [--write] [--out benchmarks/results/host_scale_h200.md]

The shipped host figures (maya/estimator/data/h200/host_overhead.json) are one lease's microbenchmarks
and in-situ readings, while the validation table scores each workload on the median step over every H200
lease that measured it (`ground_truth_repeatability.lease_medians`). Machines differ in host speed by tens
of percent, and a microbenchmark ranks a machine differently from the steps it runs (the shipped
machine's forward op ranks 16th of 19 leases, its backward op 2nd: `host_lease_means.py`), so this fits
the one factor that puts the shipped figures at the median machine's steps.

Each calibration workload measured on `MIN_LEASES` or more leases (held-out workloads never count, nor do
workloads fewer leases measured) is emulated once with its suite arguments and estimated once; its
trace is then simulated with the host costs (and cuDNN RNN launch times) the factor scales multiplied by
each factor of `GRID`, the step being the median of the timed iterations as benchmarks/validate.py
takes it. The factor kept is the one with the least mean |log(predicted / measured)| over those
workloads; GPU-bound steps do not move with it, so host-bound ones decide. `--write` stores it as
`host_scale` in host_overhead.json, where `maya.estimator.host_cost.host_costs_us` and
`launch_stream_us` multiply the shipped figures by it, but for those measured on other machines at their
own host speed (`UNSCALED_FIGURES`: DDP, FSDP2 and DTensor, from multi-GPU leases; the new-shape lookup
figures); figures measured on the user's machine (`--host-profile`) are not scaled. The fit starts from
the unscaled figures whatever the file holds. Only torch, pandas and the project are needed.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "benchmarks" / "validation"))
from ground_truth_repeatability import lease_medians  # noqa: E402
from host_phase_factors import emulated_trace  # noqa: E402
from suite import WORKLOADS, Workload  # noqa: E402
from validate import DEFAULT_STEPS, DEFAULT_WARMUP, flag_value  # noqa: E402

HOST_FILE = ROOT / "maya" / "estimator" / "data" / "h200" / "host_overhead.json"
MIN_LEASES = 3
"""A workload's median step counts only when this many leases or more measured it."""
GRID = tuple(round(0.50 + 0.01 * i, 2) for i in range(71))
"""Factors tried: 0.50 to 1.20."""


def calibration_lease_medians() -> dict[str, tuple[float, int]]:
    """Calibration workload -> (its median step ms over the leases, leases), for every one measured."""
    medians = lease_medians()
    return {w.name: medians[w.name] for w in WORKLOADS if not w.held_out and w.name in medians}


def calibration_medians(medians: dict[str, tuple[float, int]] | None = None) -> dict[str, float]:
    """Calibration workload -> its median step (ms) over the leases, for those `MIN_LEASES` or more measured
    (of `medians`, `calibration_lease_medians()` when not given)."""
    medians = calibration_lease_medians() if medians is None else medians
    return {name: ms for name, (ms, leases) in medians.items() if leases >= MIN_LEASES}


def scaled_steps_ms(workload: Workload, trace_dir: Path, factors: tuple[float, ...]) -> dict[float, float]:
    """Factor -> the predicted step (ms) of the workload's rank-0 trace in `trace_dir` with the host costs
    the factor scales times it: the median over its timed iterations (validate.py's)."""
    from maya.estimator.host_cost import host_costs_us, launch_stream_us

    df = estimated_trace(trace_dir)
    # Both costs are linear in the factor: what it scales, and what it leaves (the multi-GPU and
    # new-shape figures), apart.
    host = [host_costs_us(df, "h200", scale=s) for s in (0.0, 1.0)]
    launch = [launch_stream_us(df, "h200", scale=s) for s in (0.0, 1.0)]
    return steps_at_factors(workload, df, host, launch, factors)


def estimated_trace(trace_dir: Path):
    """The rank-0 trace in `trace_dir`, estimated for the H200 (`maya.predict.estimated_rank`)."""
    from maya.predict import estimated_rank
    from maya.trace import read_rank_trace

    return estimated_rank(read_rank_trace(trace_dir, 0), "h200")


def steps_at_factors(workload: Workload, df, host: list, launch: list, factors: tuple[float, ...]) -> dict[float, float]:
    """Factor -> the predicted step (ms) of the estimated trace `df` whose host and cuDNN RNN launch costs are
    `host[0] + factor * (host[1] - host[0])` (likewise `launch`): the median over the workload's timed
    iterations (validate.py's)."""
    from maya.hardware.cluster import cluster_for_gpu
    from maya.predict import default_params
    from maya.simulator import simulate

    warmup = flag_value(workload.argv, "--warmup", DEFAULT_WARMUP)
    end = warmup + flag_value(workload.argv, "--steps", DEFAULT_STEPS)
    cluster, params = cluster_for_gpu("h200", 1), default_params("h200")
    out = {}
    for factor in factors:
        scaled = df.assign(host_us=host[0] + factor * (host[1] - host[0]),
                           launch_us=launch[0] + factor * (launch[1] - launch[0]))
        result = simulate({0: scaled}, cluster, params=params)
        out[factor] = statistics.median(result.iteration_times_us[warmup:end]) / 1e3
    return out


def print_report(lines: list[str], out: Path | None) -> None:
    """Print the markdown `lines`, and write them to `out` when given."""
    text = "\n".join(lines) + "\n"
    print(text)
    if out:
        out.write_text(text)


def log_error(predicted: float, measured: float) -> float:
    return abs(math.log(predicted / measured))


def mean_log_error(steps: dict[str, dict], measured: dict[str, float], key) -> float:
    """Mean |log(predicted / measured)| over the workloads of `steps` (workload -> key -> predicted ms) at `key`."""
    return statistics.fmean(log_error(s[key], measured[n]) for n, s in steps.items())


def best_factor(steps: dict[str, dict], measured: dict[str, float], grid=GRID):
    """The key of `grid` (a factor, or any sortable key of `steps`' rows) with the least `mean_log_error`
    (the smaller key on a tie)."""
    return min(grid, key=lambda f: (mean_log_error(steps, measured, f), f))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--write", action="store_true", help="store the factor as host_scale in host_overhead.json")
    p.add_argument("--out", type=Path, help="also write the printed tables to this markdown file")
    args = p.parse_args(argv)
    measured = calibration_medians()
    steps: dict[str, dict[float, float]] = {}
    workloads = {w.name: w for w in WORKLOADS}
    with tempfile.TemporaryDirectory() as tmp:
        for i, name in enumerate(measured, 1):
            trace_dir = emulated_trace(name, Path(tmp), extra_args=()).parents[1]  # as validate.py runs it
            steps[name] = scaled_steps_ms(workloads[name], trace_dir, GRID)
            print(f"[{i}/{len(measured)}] {name}", file=sys.stderr, flush=True)
    best = best_factor(steps, measured)
    lines = [
        "# One multiplier of the shipped host costs, fitted on the calibration steps",
        "",
        f"Made by `python benchmarks/host_scale.py{' --write' if args.write else ''}`: {len(steps)} calibration workloads "
        f"measured on {MIN_LEASES} or more H200 leases, each scored on its median step over them "
        "(`benchmarks/results/ground_truth_repeatability_h200.md`); predicted as benchmarks/validate.py predicts them.",
        "",
        "| factor | mean abs log error | median abs error | worst abs error |",
        "|---:|---:|---:|---:|",
    ]
    for factor in GRID[::5] + ((best,) if best not in GRID[::5] else ()):
        errors = [abs(s[factor] / measured[n] - 1) for n, s in steps.items()]
        mean_log = mean_log_error(steps, measured, factor)
        mark = " (kept)" if factor == best else ""
        lines.append(f"| {factor:.2f}{mark} | {mean_log:.4f} | {statistics.median(errors):.1%} | {max(errors):.1%} |")
    lines += ["", "| workload | leases' median ms | predicted ms, factor 1.00 | error | "
              f"predicted ms, factor {best:.2f} | error |", "|---|---:|---:|---:|---:|---:|"]
    for name, s in steps.items():
        m = measured[name]
        lines.append(f"| {name} | {m:.2f} | {s[1.0]:.2f} | {s[1.0] / m - 1:+.1%} | {s[best]:.2f} | {s[best] / m - 1:+.1%} |")
    lines += ["", f"Kept: {best:.2f}."]
    print_report(lines, args.out)
    if args.write:
        data = json.loads(HOST_FILE.read_text())
        data["host_scale"] = best
        data["host_scale_method"] = (
            f"python benchmarks/host_scale.py --write: the factor of {GRID[0]:.2f}-{GRID[-1]:.2f} (steps of 0.01) with the "
            f"least mean |log(predicted / measured)| over the {len(steps)} calibration workloads measured on {MIN_LEASES} or "
            "more H200 leases, each scored on its median step over them, every host cost computed from this file's "
            "figures multiplied by it (but UNSCALED_FIGURES and new_shape_us, measured on other machines at their own "
            "speed); maya.estimator.host_cost multiplies those figures by it.")
        HOST_FILE.write_text(json.dumps(data, indent=2) + "\n")
        print(f"wrote host_scale {best:.2f} to {HOST_FILE.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
