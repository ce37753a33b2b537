"""Maya's compiled-FlexAttention times against a GPU's: both files come from
benchmarks/gpu/flex_attention_probe.py, one run on the GPU and one under `maya emulate` (where
`Event.elapsed_time` answers Maya's prediction).

    python benchmarks/flex_attention_check.py GPU.json MAYA.json [--out table.md]

Prints a row per shape, mask and kind (compiled FlexAttention forward, forward + backward, SDPA's
forward of the same shapes): measured and predicted milliseconds and the error; then the median and
worst |error| per kind.
"""

from __future__ import annotations

import pandas as pd
import probe_check


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
    lines = [probe_check.measured_on(env) + " Shapes: batch x query heads x key/value heads x tokens x head dim, "
             "bfloat16.", "",
             "| shape | mask | kind | measured ms | predicted ms | error |", "|---|---|---|---:|---:|---:|"]
    for r in df.itertuples():
        lines.append(f"| {r.shape} | {r.mask} | {r.kind} | {r.measured_ms:.3f} | {r.predicted_ms:.3f} | {r.error:+.1%} |")
    lines.append("")
    for kind, g in df.groupby("kind", sort=False):
        lines.append(f"- {kind}: median |error| {g.error.abs().median():.1%}, worst {g.error.abs().max():.1%} "
                     f"over {len(g)} rows")
    return "\n".join(lines)


if __name__ == "__main__":
    probe_check.main(__doc__, joined, report)
