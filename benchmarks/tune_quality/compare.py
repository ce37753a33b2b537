"""Compare Maya's ranking of the single-GPU study (examples/tune_gpt.py) with real H200 measurements.

The quality bar (issue 7): the configuration Maya predicts best is the measured best, or its
measured step time is within 3% of the measured best's. At one GPU the cost objective ranks as the
step time does (cost = step time * steps * 1 GPU * price), so step times are compared directly.
Also reported: each configuration's predicted and measured step time and peak allocated memory, and
the Spearman rank correlation of the two orderings.

    python benchmarks/tune_quality/compare.py --run-maya          # emulate the 12 configurations (minutes), save predictions
    python benchmarks/tune_quality/compare.py                      # compare saved predictions with measured_h200.json
    python benchmarks/tune_quality/compare.py --write              # ... and write results_h200.md
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
KEYS = ["micro_batch", "checkpoint", "precision"]
TOLERANCE = 0.03
"""Largest allowed gap between the measured time of Maya's pick and the measured best."""


def run_maya(out_csv: Path) -> pd.DataFrame:
    """Run the study with Maya (local Ray) and save its predictions."""
    from maya.tune import load_study, run_study

    results = run_study(load_study(ROOT / "examples" / "tune_gpt.py"), Path(tempfile.mkdtemp(prefix="maya-quality-")))
    table = results.table[[*KEYS, "status", "step_time_ms", "peak_allocated_bytes", "peak_reserved_bytes", "reason"]]
    table.to_csv(out_csv, index=False)
    return table


def measured_table(path: Path) -> tuple[pd.DataFrame, dict]:
    """One row per measured configuration, from either measurement script's JSON.

    measure_h200.py writes `configs` (step time between optimizer-step ends, bytes) and an
    `environment`; benchmarks/gpu/measure_train_gpt.py writes `configurations` (train_gpt.py's own
    per-step CUDA-event times, MiB) with the environment at the top level.
    """
    report = json.loads(path.read_text())
    if "configurations" in report:
        rows = [{**{k: c[k] for k in KEYS}, "measured_ok": c.get("status") == "ok", "measured_oom": c.get("status") == "oom",
                 "measured_step_ms": c.get("median_step_ms"),
                 "measured_allocated_bytes": c["peak_allocated_mib"] * 2**20 if c.get("peak_allocated_mib") else None}
                for c in report["configurations"]]
        report = {**report, "environment": {k: report.get(k) for k in ("gpu", "torch", "cuda")},
                  "steps": None, "warmup": None}
    else:
        rows = [{**{k: c[k] for k in KEYS}, "measured_ok": c.get("ok", False), "measured_oom": c.get("oom", False),
                 "measured_step_ms": c.get("median_step_ms"), "measured_allocated_bytes": c.get("max_memory_allocated")}
                for c in report["configs"]]
    return pd.DataFrame(rows), report


def compare(predicted: pd.DataFrame, measured: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """Joined table (one row per configuration) and the summary figures."""
    table = predicted.merge(measured, on=KEYS, how="outer", indicator=True)
    missing = table[table["_merge"] != "both"]
    if len(missing):
        raise SystemExit(f"predictions and measurements cover different configurations:\n{missing[KEYS + ['_merge']]}")
    table = table.drop(columns="_merge")
    table["time_error"] = table["step_time_ms"] / table["measured_step_ms"] - 1
    table["memory_error"] = table["peak_allocated_bytes"] / table["measured_allocated_bytes"] - 1
    both = table[(table["status"] == "ok") & table["measured_ok"]]
    pick = table[table["status"] == "ok"].sort_values("step_time_ms").iloc[0]
    best = table[table["measured_ok"]].sort_values("measured_step_ms").iloc[0]
    gap = pick["measured_step_ms"] / best["measured_step_ms"] - 1 if pick["measured_ok"] else float("inf")
    summary = {
        "maya_pick": {k: _plain(pick[k]) for k in KEYS},
        "maya_pick_measured_step_ms": pick["measured_step_ms"],
        "measured_best": {k: _plain(best[k]) for k in KEYS},
        "measured_best_step_ms": best["measured_step_ms"],
        "gap": gap,
        "within_tolerance": bool(gap <= TOLERANCE),
        "spearman": float(both["step_time_ms"].rank().corr(both["measured_step_ms"].rank())),
        "feasibility_agrees": bool(((table["status"] == "ok") == table["measured_ok"]).all()),
        "median_abs_time_error": float(both["time_error"].abs().median()),
        "median_abs_memory_error": float(both["memory_error"].abs().median()),
    }
    return table.sort_values("measured_step_ms"), summary


def _plain(value):
    """A numpy scalar as the Python value it holds."""
    return value.item() if hasattr(value, "item") else value


def markdown(table: pd.DataFrame, summary: dict, report: dict) -> str:
    env = report["environment"]
    versions = ", ".join(f"{k} {env[k]}" for k in ("driver", "torch", "cuda", "cudnn") if env.get(k))
    lines = [
        "# Maya's ranking of the single-GPU study against an H200",
        "",
        f"Study: examples/tune_gpt.py (GPT-2 small, global batch {report['global_batch']} x 1,024 tokens). "
        f"Measured by `{report['command']}` on {env['gpu']} ({versions}), {report['date']}. Predicted by "
        "`maya tune examples/tune_gpt.py` (maya_predictions.csv). Compared by "
        "`python benchmarks/tune_quality/compare.py --write`.",
        "",
        f"- Maya's pick: {summary['maya_pick']}, measured {summary['maya_pick_measured_step_ms']:.1f} ms",
        f"- Measured best: {summary['measured_best']}, {summary['measured_best_step_ms']:.1f} ms",
        f"- Gap: {summary['gap']:+.1%} (bar: <= {TOLERANCE:.0%}): **{'met' if summary['within_tolerance'] else 'not met'}**",
        f"- Spearman rank correlation of predicted and measured step times: {summary['spearman']:.3f}",
        f"- Median |error|: step time {summary['median_abs_time_error']:.1%}, peak allocated memory "
        f"{summary['median_abs_memory_error']:.1%}; feasibility agrees: {summary['feasibility_agrees']}",
        "",
        "| micro-batch | checkpoint | precision | predicted ms | measured ms | time error | predicted GiB | measured GiB |",
        "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for _, r in table.iterrows():
        lines.append(
            f"| {r['micro_batch']} | {r['checkpoint']} | {r['precision']} | {r['step_time_ms']:.1f} | "
            f"{r['measured_step_ms']:.1f} | {r['time_error']:+.1%} | {r['peak_allocated_bytes'] / 2**30:.2f} | "
            f"{r['measured_allocated_bytes'] / 2**30:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--measured", default=str(HERE / "measured_h200.json"),
                   help="measure_h200.py's or benchmarks/gpu/measure_train_gpt.py's output")
    p.add_argument("--predictions", default=str(HERE / "maya_predictions.csv"), help="Maya's predictions (CSV)")
    p.add_argument("--run-maya", action="store_true", help="run the study with Maya first and save --predictions")
    p.add_argument("--write", action="store_true", help="write results_h200.md beside this script")
    args = p.parse_args()
    predictions = Path(args.predictions)
    predicted = run_maya(predictions) if args.run_maya else pd.read_csv(predictions)
    if not Path(args.measured).exists():
        print(f"saved Maya's predictions to {predictions}; no measurements at {args.measured} yet "
              "(run measure_h200.py on the GPU machine)")
        return
    measured, report = measured_table(Path(args.measured))
    table, summary = compare(predicted, measured)
    text = markdown(table, summary, report)
    print(text)
    if args.write:
        (HERE / "results_h200.md").write_text(text)
    sys.exit(0 if summary["within_tolerance"] else 1)


if __name__ == "__main__":
    main()
