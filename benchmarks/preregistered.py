"""Score the predictions registered before measurement against the ground truth measured since.

    python benchmarks/preregistered.py [--gpu h200|h100] [--registered benchmarks/validation/PREREGISTERED.md]

`benchmarks/validation/PREREGISTERED.md` holds Maya's predictions for workloads that joined the suite
after the models were made, committed before any GPU ran those workloads. This script reads that
table as it was committed, never the current predictions, and compares it with the ground truth the
validation table is scored on (`benchmarks/validation/ground_truth_<gpu>.json`, each step time the
median over that GPU's leases as `validate.py` takes it). Prints a markdown table, one row per
registered workload (those not measured yet say so), and the median and worst |error| of step time
and peak allocated memory, held-out workloads apart. Exits 1 when the file has no table for `--gpu`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from ground_truth_repeatability import LEASE_SETS, lease_medians, measurements  # noqa: E402

REGISTERED = ROOT / "benchmarks" / "validation" / "PREREGISTERED.md"
GIB = 1024**3


def registered_predictions(path: Path, gpu: str) -> dict[str, dict]:
    """Workload -> {"held_out", "step_ms", "allocated_gib"} of `gpu` from the first markdown table of `path`.

    Raises:
        ValueError: the file has no table with `gpu`'s step-time column.
    """
    lines = []  # the file's first table: its first run of lines that start with "|"
    for line in path.read_text().splitlines():
        if line.strip().startswith("|"):
            lines.append(line.strip())
        elif lines:
            break
    if not lines:
        raise ValueError(f"{path}: no table")
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    step, memory = f"{gpu.upper()} step ms", f"{gpu.upper()} peak allocated GiB"
    if step not in header or memory not in header:
        raise ValueError(f"{path}: no '{step}' and '{memory}' columns (it has: {', '.join(header)})")
    out = {}
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        row = dict(zip(header, cells))
        out[row["workload"]] = {"held_out": row["held out"] == "yes", "step_ms": float(row[step]),
                                "allocated_gib": float(row[memory])}
    return out


def _error(predicted: float, measured: float | None) -> float | None:
    return None if not measured else (predicted - measured) / measured


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:+.1f}%"


def score(registered: dict[str, dict], gpu: str) -> str:
    """The markdown table and summary lines of `registered` against `gpu`'s scored ground truth."""
    scored_file, _ = LEASE_SETS[gpu]
    truth = {w["name"]: w for w in json.loads(scored_file.read_text())["workloads"]}
    medians = lease_medians(measurements(gpu))
    lines = [f"Registered predictions ({gpu.upper()}) against `{scored_file.relative_to(ROOT)}` and its leases",
             "", "| workload | held out | predicted ms | measured ms | leases | time error | predicted GiB | "
             "measured GiB | memory error |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    errors: dict[bool, list[tuple[str, float, float]]] = {True: [], False: []}
    for name, p in registered.items():
        w = truth.get(name)
        if w is None or w.get("median_step_ms") is None:
            lines.append(f"| {name} | {'yes' if p['held_out'] else 'no'} | {p['step_ms']:.2f} | not measured | 0 | — | "
                         f"{p['allocated_gib']:.2f} | — | — |")
            continue
        measured_ms, leases = medians.get(name, (w["median_step_ms"], 1))
        measured_gib = w["max_memory_allocated"] / GIB
        t, m = _error(p["step_ms"], measured_ms), _error(p["allocated_gib"], measured_gib)
        errors[p["held_out"]].append((name, t, m))
        lines.append(f"| {name} | {'yes' if p['held_out'] else 'no'} | {p['step_ms']:.2f} | {measured_ms:.2f} | {leases} | "
                     f"{_pct(t)} | {p['allocated_gib']:.2f} | {measured_gib:.2f} | {_pct(m)} |")
    lines.append("")
    for label, rows in (("held out", errors[True]), ("the others", errors[False]), ("all", errors[True] + errors[False])):
        if not rows:
            continue
        for what, i in (("time", 1), ("memory", 2)):
            worst = max(rows, key=lambda r: abs(r[i]))
            lines.append(f"- {label} {what}: median |error| {100 * statistics.median(abs(r[i]) for r in rows):.1f}%, "
                         f"worst {100 * abs(worst[i]):.1f}% ({worst[0]}) over {len(rows)} measured")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpu", choices=sorted(LEASE_SETS), default="h200")
    p.add_argument("--registered", type=Path, default=REGISTERED, help="markdown file of registered predictions")
    args = p.parse_args(argv)
    try:
        registered = registered_predictions(args.registered, args.gpu)
    except (OSError, ValueError) as e:
        print(f"preregistered.py: {e}", file=sys.stderr)
        return 1
    print(score(registered, args.gpu))
    return 0


if __name__ == "__main__":
    sys.exit(main())
