"""Maya's compiled-FlexAttention times against a GPU's: both files come from
benchmarks/gpu/flex_attention_probe.py, one run on the GPU and one under `maya emulate` (where
`Event.elapsed_time` answers Maya's prediction).

    python benchmarks/flex_attention_check.py GPU.json MAYA.json [--out table.md]

Prints a row per shape, mask and kind (compiled FlexAttention forward, forward + backward, SDPA's
forward of the same shapes): measured and predicted milliseconds and the error; then the median and
worst |error| per kind.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd


def joined(gpu: dict, maya: dict) -> pd.DataFrame:
    """One row per (shape, mask, kind) in both files: measured_ms, predicted_ms, error."""
    def table(d: dict, name: str) -> pd.DataFrame:
        df = pd.DataFrame(d["rows"])
        df["shape"] = df["shape"].map(lambda s: " x ".join(map(str, s)))
        return df.rename(columns={"median_ms": name})

    df = table(gpu, "measured_ms").merge(table(maya, "predicted_ms"), on=["shape", "mask", "kind"])
    if df.empty:
        raise SystemExit("flex_attention_check: the two files share no (shape, mask, kind) row")
    df["error"] = df.predicted_ms / df.measured_ms - 1
    return df


def report(df: pd.DataFrame, env: dict) -> str:
    lines = [f"Measured on {env.get('gpu_name')} (torch {env.get('torch_version')}, CUDA {env.get('cuda_version')}, "
             f"{env.get('date')}). Shapes: batch x query heads x key/value heads x tokens x head dim, bfloat16.", "",
             "| shape | mask | kind | measured ms | predicted ms | error |", "|---|---|---|---:|---:|---:|"]
    for r in df.itertuples():
        lines.append(f"| {r.shape} | {r.mask} | {r.kind} | {r.measured_ms:.3f} | {r.predicted_ms:.3f} | {r.error:+.1%} |")
    lines.append("")
    for kind, g in df.groupby("kind", sort=False):
        lines.append(f"- {kind}: median |error| {g.error.abs().median():.1%}, worst {g.error.abs().max():.1%} "
                     f"over {len(g)} rows")
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
