"""Two other shapes of the host-cost model, scored on the calibration steps the way host_scale.py fits.

    python benchmarks/host_model_trials.py [--out benchmarks/results/host_model_trials_h200.md]

Session 48 tried these against the shipped model (per-op figures from the first ground truth's machine,
a forward in-situ factor, one `host_scale`); neither is shipped. Each trial computes every calibration
workload's host costs its own way, then, like `host_scale.py`, multiplies the costs it scales by each
factor of `GRID` (0.50-1.60), simulates, and keeps the factor with the least mean |log(predicted / measured)| over
the 19 calibration workloads measured on three or more H200 leases (held-out workloads never count).
Trials:

- `shipped`: the shipped figures and forward in-situ factor (what host_scale.py fits).
- `shipped, optimizer in situ`: the same, with every optimizer-phase host cost multiplied by the
  optimizer's measured in-situ ratio (below).
- `median lease`: the per-op figures of the H200 leases whose microbenchmarks used the current
  backward method (`CURRENT_LEASES`, each lease's runs averaged, the median over leases), the shipped
  in-situ CNN extras at that speed (`maya.estimator.host_cost.with_in_situ_extras`), the shipped forward
  in-situ factor.
- `median lease, phase in situ`: the same, with each phase's measured in-situ ratio: the forward's as
  its factor, and every backward and optimizer host cost multiplied by theirs.

A phase's in-situ ratio is read from `benchmarks/results/host_phase_factors_h200.md` (host_phase_factors.py:
real host issue time over Maya's model with the lease's own figures and no in-situ factor): for each
workload its rows marked host-bound, the median over leases, then the median over workloads; for the
backward only the current-method leases count. Only torch, pandas and the project are needed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from host_phase_factors import PHASES, emulated_trace, in_situ_ratio, lease_figures  # noqa: E402
from host_scale import (  # noqa: E402
    best_factor,
    calibration_medians,
    estimated_trace,
    mean_log_error,
    print_report,
    steps_at_factors,
)
from suite import WORKLOADS  # noqa: E402

LEASES = ROOT / "benchmarks" / "gpu" / "host_phase_h200"
CURRENT_LEASES = ("lease_n", "lease_o", "lease_p")
"""H200 leases whose `maya profile --families host` measured the backward op by the current method."""
PHASE_TABLE = ROOT / "benchmarks" / "results" / "host_phase_factors_h200.md"
GRID = tuple(round(0.50 + 0.01 * i, 2) for i in range(111))
"""Factors tried: 0.50 to 1.60 (host_scale.py stops at 1.20; the median lease's figures are a faster machine's)."""
TRIALS: dict[str, tuple[bool, tuple[str, ...]]] = {
    "shipped": (False, ()),
    "shipped, optimizer in situ": (False, ("optimizer",)),
    "median lease": (True, ()),
    "median lease, phase in situ": (True, PHASES),
}
"""Trial -> (whether it takes the median lease's figures, the phases whose host costs take their in-situ
ratio: the forward's as its factor, the others' as multipliers)."""


def median_lease_figures() -> dict[str, float]:
    """The median over `CURRENT_LEASES` of each lease's microbenchmark figures (its runs averaged), with
    the shipped in-situ CNN extras at that speed."""
    from maya.estimator.host_cost import with_in_situ_extras

    leases = [lease_figures(LEASES / name) for name in CURRENT_LEASES]
    keys = sorted(set.intersection(*(set(f) for f in leases)))
    return with_in_situ_extras({k: statistics.median(f[k] for f in leases) for k in keys})


def phase_ratios(table: str) -> dict[str, float]:
    """Phase -> its in-situ ratio from host_phase_factors.py's table (the module docstring says how)."""
    per: dict[str, dict[str, list[float]]] = {p: {} for p in PHASES}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 7 or not cells[0].startswith("lease_") or cells[3] != "yes":
            continue
        lease, workload = cells[0], cells[1]
        for phase, cell in zip(PHASES, cells[4:]):
            if phase == "backward" and lease not in CURRENT_LEASES:
                continue
            per[phase].setdefault(workload, []).append(float(cell.split("=")[-1]))
    return {p: in_situ_ratio(w) for p, w in per.items()}


def trial_costs(df, trial: str, figures: dict[str, float], ratios: dict[str, float]):
    """(costs at scale 0, costs at scale 1) of the trace rows under `trial`, host and cuDNN RNN launch."""
    import numpy as np

    from maya.estimator.host_cost import host_costs_us, launch_stream_us

    median, phases = TRIALS[trial]
    per_op = figures if median else None
    forward = ratios["forward"] if "forward" in phases else None
    phase = df["phase"].to_numpy()
    multiplier = np.ones(len(df))
    for p in phases:
        if p != "forward":
            multiplier[phase == p] = ratios[p]
    host = [host_costs_us(df, "h200", per_op_us=per_op, forward_factor=forward, scale=s) * multiplier for s in (0.0, 1.0)]
    launch = [launch_stream_us(df, "h200", per_op_us=per_op, scale=s) for s in (0.0, 1.0)]
    return host, launch


def trial_steps_ms(workload, trace_dir: Path, figures: dict[str, float], ratios: dict[str, float]) -> dict[str, dict[float, float]]:
    """Trial -> factor -> the predicted step (ms) of the workload's rank-0 trace (host_scale.py's way)."""
    df = estimated_trace(trace_dir)
    return {trial: steps_at_factors(workload, df, *trial_costs(df, trial, figures, ratios), GRID) for trial in TRIALS}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, help="also write the printed tables to this markdown file")
    args = p.parse_args(argv)
    ratios = phase_ratios(PHASE_TABLE.read_text())
    figures = median_lease_figures()
    measured = calibration_medians()
    workloads = {w.name: w for w in WORKLOADS}
    steps: dict[str, dict[str, dict[float, float]]] = {t: {} for t in TRIALS}
    with tempfile.TemporaryDirectory() as tmp:
        for i, name in enumerate(measured, 1):
            trace_dir = emulated_trace(name, Path(tmp), extra_args=()).parents[1]  # as validate.py runs it
            for trial, by_factor in trial_steps_ms(workloads[name], trace_dir, figures, ratios).items():
                steps[trial][name] = by_factor
            print(f"[{i}/{len(measured)}] {name}", file=sys.stderr, flush=True)
    best = {t: best_factor(steps[t], measured, GRID) for t in TRIALS}
    lines = [
        "# Other shapes of the host-cost model, on the calibration steps",
        "",
        f"Made by `python benchmarks/host_model_trials.py`: {len(measured)} calibration workloads measured on three or "
        "more H200 leases, each scored on its median step over them; each trial's factor fitted as host_scale.py fits it.",
        "",
        "- In-situ ratios from `benchmarks/results/host_phase_factors_h200.md` (host-bound rows; the backward's from "
        f"{', '.join(CURRENT_LEASES[:-1])} and later only): " + ", ".join(f"{p} {r:.3f}" for p, r in ratios.items()) + ".",
        f"- Median lease figures ({', '.join(CURRENT_LEASES)}): "
        + ", ".join(f"{k} {v:.2f}" for k, v in figures.items()) + ".",
        "",
        "| trial | factor kept | mean abs log error | median abs error | worst abs error |",
        "|---|---:|---:|---:|---:|",
    ]
    for t in TRIALS:
        errors = {n: s[best[t]] / measured[n] - 1 for n, s in steps[t].items()}
        worst = max(errors, key=lambda n: abs(errors[n]))
        mean_log = mean_log_error(steps[t], measured, best[t])
        lines.append(f"| {t} | {best[t]:.2f} | {mean_log:.4f} | {statistics.median(abs(e) for e in errors.values()):.1%} | "
                     f"{errors[worst]:+.1%} ({worst}) |")
    lines += ["", "| workload | leases' median ms | " + " | ".join(f"{t} ({best[t]:.2f})" for t in TRIALS) + " |",
              "|---|---:|" + "---:|" * len(TRIALS)]
    for name, m in measured.items():
        lines.append(f"| {name} | {m:.2f} | " + " | ".join(f"{steps[t][name][best[t]] / m - 1:+.1%}" for t in TRIALS) + " |")
    print_report(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
