"""Score the predictions registered before measurement against the ground truth measured since.

    python benchmarks/preregistered.py [--gpu h200|h100] [--registered benchmarks/validation/PREREGISTERED.md]

`benchmarks/validation/PREREGISTERED.md` holds Maya's predictions for workloads that joined the suite
after the models were made, committed before any GPU ran those workloads. This script reads that
table as it was committed, never the current predictions, and compares it with the ground truth the
validation table is scored on (`benchmarks/validation/ground_truth_<gpu>.json`, each step time the
median over that GPU's leases as `validate.py` takes it). Prints `validate.py`'s table and summary
lines for them: one row per registered workload (those not measured yet say "no ground truth"), and
the median and worst |error| of step time and peak memory, held-out workloads apart. Exits 1 when the
file has no table for `--gpu`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from validate import GIB, LEASE_SETS, Row, format_table, join_leases, summary_lines  # noqa: E402

REGISTERED = ROOT / "benchmarks" / "validation" / "PREREGISTERED.md"


def registered_predictions(path: Path, gpu: str) -> dict[str, dict]:
    """Workload -> {"held_out", "step_ms", "allocated_gib", "reserved_gib"} of `gpu` from the first
    markdown table of `path` (reserved None where the table has no such column).

    Raises:
        ValueError: the file has no table with `gpu`'s step-time and peak-allocated columns.
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
    step, memory, reserved = (f"{gpu.upper()} {what}" for what in ("step ms", "peak allocated GiB", "peak reserved GiB"))
    if step not in header or memory not in header:
        raise ValueError(f"{path}: no '{step}' and '{memory}' columns (it has: {', '.join(header)})")
    out = {}
    for line in lines[2:]:
        row = dict(zip(header, (c.strip() for c in line.strip("|").split("|"))))
        out[row["workload"]] = {"held_out": row["held out"] == "yes", "step_ms": float(row[step]),
                                "allocated_gib": float(row[memory]),
                                "reserved_gib": float(row[reserved]) if reserved in row else None}
    return out


def score(registered: dict[str, dict], gpu: str) -> str:
    """`validate.py`'s table and summary lines of `registered` against `gpu`'s scored ground truth, each
    step time the median over that GPU's leases."""
    scored_file, _ = LEASE_SETS[gpu]
    truth = {w["name"]: w for w in json.loads(scored_file.read_text())["workloads"]}
    rows = []
    for name, p in registered.items():
        w = truth.get(name) if truth.get(name, {}).get("ok") else None
        rows.append(Row(
            name=name, held_out=p["held_out"], status="ok" if w else "no ground truth",
            measured_ms=w and w["median_step_ms"], predicted_ms=p["step_ms"],
            measured_bytes=w and w["max_memory_allocated"], predicted_bytes=round(p["allocated_gib"] * GIB),
            measured_reserved=w and w.get("max_memory_reserved"),
            predicted_reserved=None if p["reserved_gib"] is None else round(p["reserved_gib"] * GIB),
        ))  # fmt: skip
    join_leases(rows, gpu)
    return "\n".join([f"Registered predictions ({gpu.upper()}) against `{scored_file.relative_to(ROOT)}` and its leases",
                      "", format_table(rows), "", *summary_lines(rows)])


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
