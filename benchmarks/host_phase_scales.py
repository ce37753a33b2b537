"""The shipped host figures with the forward and the backward scaled apart, fitted on the calibration steps.

    python benchmarks/host_phase_scales.py [--out benchmarks/results/host_phase_scales_h200.md]

`host_scale.py` fits one factor of every host cost on the calibration workloads measured on three or
more H200 leases. The host phase probes say the backward's per-op cost and the forward's differ from
the microbenchmarks by different ratios (`benchmarks/results/host_phase_factors_h200.md`), and
Qwen2-0.5B's modelled host time (about 60% of it backward) is higher than its measured step. This
fits two factors instead, on the same workloads and objective (mean |log(predicted / measured)| of
the median step): `a` scales the host costs of every row but the backward's (forward, optimizer,
other), `b` the backward rows', each over `A_GRID` x `B_GRID`; the multi-GPU and new-shape figures
stay unscaled, as host_scale.py leaves them. It prints the objective over the grid (rows `b`, columns
`a`), the best pair against the best pair with a = b, and each workload's error at both. The
calibration workloads fewer leases measured (`FEW_LEASES`, not in the fit) are predicted too and
shown against their leases' median, at both pairs and along the valley (the best `a` of each `b`).
Nothing is written to the shipped files. Only torch, pandas and the project are needed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "benchmarks" / "validation"))
from host_phase_factors import emulated_trace  # noqa: E402
from host_scale import (  # noqa: E402
    MIN_LEASES,
    best_factor,
    calibration_lease_medians,
    calibration_medians,
    estimated_trace,
    mean_log_error,
    print_report,
    steps_at_factors,
)
from suite import WORKLOADS  # noqa: E402

A_GRID = tuple(round(0.60 + 0.05 * i, 2) for i in range(17))
"""Factors of the host costs outside the backward: 0.60 to 1.40."""
B_GRID = tuple(round(0.40 + 0.05 * i, 2) for i in range(17))
"""Factors of the backward rows' host costs: 0.40 to 1.20."""


def phase_split(zero: np.ndarray, one: np.ndarray, backward: np.ndarray, a: float, b: float) -> np.ndarray:
    """Costs that are `zero` at scale 0 and `one` at scale 1, with the scaled part times `b` on the
    `backward` rows and times `a` on the others."""
    return zero + (one - zero) * np.where(backward, b, a)


def pair_steps_ms(workload, trace_dir: Path) -> dict[tuple[float, float], float]:
    """(a, b) -> the workload's predicted step (ms), as host_scale.py simulates it."""
    from maya.estimator.host_cost import host_costs_us, launch_stream_us

    df = estimated_trace(trace_dir)
    backward = (df["phase"] == "backward").to_numpy()
    host = [host_costs_us(df, "h200", scale=s) for s in (0.0, 1.0)]
    launch = [launch_stream_us(df, "h200", scale=s) for s in (0.0, 1.0)]
    out = {}
    for b in B_GRID:
        # At a given b the costs are linear in a: steps_at_factors sweeps A_GRID between a = 0 and a = 1.
        scaled = [phase_split(*host, backward, a, b) for a in (0.0, 1.0)]
        launches = [phase_split(*launch, backward, a, b) for a in (0.0, 1.0)]
        out.update({(a, b): step for a, step in steps_at_factors(workload, df, scaled, launches, A_GRID).items()})
    return out


def few_lease_medians(medians: dict[str, tuple[float, int]] | None = None) -> dict[str, tuple[float, int]]:
    """Calibration workload -> (median step ms, leases) for those fewer than `MIN_LEASES` leases measured
    (of `medians`, `calibration_lease_medians()` when not given): those `calibration_medians` leaves out."""
    medians = calibration_lease_medians() if medians is None else medians
    return {name: value for name, value in medians.items() if value[1] < MIN_LEASES}


def valley(steps, measured, pairs) -> list[tuple[float, float]]:
    """For each b, the pair with the best a (the objective's valley across the grid)."""
    return [best_factor(steps, measured, [p for p in pairs if p[1] == b]) for b in B_GRID]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, help="also write the printed tables to this markdown file")
    args = p.parse_args(argv)
    medians = calibration_lease_medians()  # the leases' files, read once
    measured, few = calibration_medians(medians), few_lease_medians(medians)
    workloads = {w.name: w for w in WORKLOADS}
    steps: dict[str, dict[tuple[float, float], float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, name in enumerate([*measured, *few], 1):
            trace_dir = emulated_trace(name, Path(tmp), extra_args=()).parents[1]  # as validate.py runs it
            steps[name] = pair_steps_ms(workloads[name], trace_dir)
            print(f"[{i}/{len(measured) + len(few)}] {name}", file=sys.stderr, flush=True)
    others = {name: steps.pop(name) for name in few}
    pairs = [(a, b) for a in A_GRID for b in B_GRID]
    best = best_factor(steps, measured, pairs)
    same = best_factor(steps, measured, [pair for pair in pairs if pair[0] == pair[1]])
    lines = [
        "# The forward and the backward host costs scaled apart, on the calibration steps",
        "",
        f"Made by `python benchmarks/host_phase_scales.py`: {len(measured)} calibration workloads measured on three or "
        "more H200 leases, each scored on its median step over them; `a` scales the host costs outside the backward, "
        "`b` the backward's, of the shipped figures.",
        "",
        f"- best pair: a = {best[0]:.2f}, b = {best[1]:.2f}, mean abs log error {mean_log_error(steps, measured, best):.4f}",
        f"- best with a = b: {same[0]:.2f}, mean abs log error {mean_log_error(steps, measured, same):.4f}",
        "",
        "Mean abs log error over the grid (rows b, columns a):",
        "",
        "| b \\ a | " + " | ".join(f"{a:.2f}" for a in A_GRID) + " |",
        "|---|" + "---:|" * len(A_GRID),
    ]
    for b in B_GRID:
        lines.append(f"| {b:.2f} | " + " | ".join(f"{mean_log_error(steps, measured, (a, b)):.4f}" for a in A_GRID) + " |")
    lines += ["", f"| workload | leases' median ms | a = b = {same[0]:.2f} | a = {best[0]:.2f}, b = {best[1]:.2f} |",
              "|---|---:|---:|---:|"]
    for name, m in measured.items():
        lines.append(f"| {name} | {m:.2f} | {steps[name][same] / m - 1:+.1%} | {steps[name][best] / m - 1:+.1%} |")
    if others:
        line = valley(steps, measured, pairs)
        lines += ["", "Calibration workloads on fewer leases (not in the fit), at both pairs and along the valley "
                  "(each b with its best a):", "",
                  "| workload | leases | leases' median ms | a = b | best pair | " + " | ".join(f"{a:.2f}, {b:.2f}" for a, b in line) + " |",
                  "|---|---:|---:|---:|---:|" + "---:|" * len(line)]
        for name, s in others.items():
            m, n = few[name]
            lines.append(f"| {name} | {n} | {m:.2f} | {s[same] / m - 1:+.1%} | {s[best] / m - 1:+.1%} | "
                         + " | ".join(f"{s[p] / m - 1:+.1%}" for p in line) + " |")
    print_report(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
