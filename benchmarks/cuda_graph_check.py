"""Maya's CUDA-graph step times against a GPU's: both files come from benchmarks/gpu/cuda_graph_probe.py,
one run on the GPU and one under `maya emulate` (where `Event.elapsed_time` answers Maya's prediction).

    python benchmarks/cuda_graph_check.py GPU.json MAYA.json [--out table.md]

Prints a row per model and mode (eager, whole-step graph, make_graphed_callables): measured and
predicted milliseconds per step, the error, and the measured and predicted speed-up over eager.
"""

from __future__ import annotations

import pandas as pd
import probe_check


def joined(gpu: dict, maya: dict) -> pd.DataFrame:
    """One row per (model, mode) in both files: measured_ms, predicted_ms, error and the speed-ups."""
    keys = ["model", "mode"]
    measured = pd.DataFrame(gpu["rows"]).rename(columns={"step_ms": "measured_ms"})
    predicted = pd.DataFrame(maya["rows"]).rename(columns={"step_ms": "predicted_ms"})
    df = measured[[*keys, "measured_ms"]].merge(predicted[[*keys, "predicted_ms"]], on=keys)
    if df.empty:
        raise SystemExit("cuda_graph_check: the two files share no (model, mode) row")
    df["error"] = df.predicted_ms / df.measured_ms - 1
    eager = df[df["mode"] == "eager"].set_index("model")
    df["measured_speedup"] = [eager.measured_ms.get(m, float("nan")) / t for m, t in zip(df.model, df.measured_ms)]
    df["predicted_speedup"] = [eager.predicted_ms.get(m, float("nan")) / t for m, t in zip(df.model, df.predicted_ms)]
    return df


def report(df: pd.DataFrame, env: dict) -> str:
    lines = [probe_check.measured_on(env), "",
             "| model | mode | measured ms | predicted ms | error | measured speed-up over eager | predicted speed-up |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in df.itertuples():
        lines.append(f"| {r.model} | {r.mode} | {r.measured_ms:.3f} | {r.predicted_ms:.3f} | {r.error:+.1%} | "
                     f"{r.measured_speedup:.2f}x | {r.predicted_speedup:.2f}x |")
    lines.append("")
    for mode, g in df.groupby("mode", sort=False):
        lines.append(f"- {mode}: median |error| {g.error.abs().median():.1%}, worst {g.error.abs().max():.1%} "
                     f"over {len(g)} models")
    return "\n".join(lines)


if __name__ == "__main__":
    probe_check.main(__doc__, joined, report)
