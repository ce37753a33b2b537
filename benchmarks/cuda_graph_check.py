"""Maya's CUDA-graph step times against a GPU's: both files come from benchmarks/gpu/cuda_graph_probe.py,
one run on the GPU and one under `maya emulate` (where `Event.elapsed_time` answers Maya's prediction).

    python benchmarks/cuda_graph_check.py GPU.json MAYA.json [--out table.md]

Prints a row per model and mode (eager, whole-step graph, make_graphed_callables): measured and
predicted milliseconds per step, the error, and the measured and predicted speed-up over eager.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd


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
    lines = [f"Measured on {env.get('gpu_name')} (torch {env.get('torch_version')}, CUDA {env.get('cuda_version')}, "
             f"{env.get('date')}).", "",
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("gpu", type=Path, help="the probe's output on the GPU")
    p.add_argument("maya", type=Path, help="the probe's output under maya emulate")
    p.add_argument("--out", type=Path, help="also write the table here (Markdown)")
    args = p.parse_args()
    gpu, maya = json.loads(args.gpu.read_text()), json.loads(args.maya.read_text())
    text = report(joined(gpu, maya), gpu.get("env", {}))
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
