"""Maya's float8 GEMM estimates (the roofline at the catalog's float8 rate) against a GPU's times.

Both files come from benchmarks/gpu/float8_gemm_probe.py: one run on the GPU, one under `maya
emulate` (where `Event.elapsed_time` answers Maya's estimate):

    python benchmarks/float8_gemm_check.py GPU.json MAYA.json [--out table.md]

Prints a row per shape and kind (bfloat16, float8, float8 with fast accumulation): measured and
predicted microseconds, the error, and the measured float8 / bfloat16 speed-up; then the median and
time-weighted |error| per kind.
"""

from __future__ import annotations

import pandas as pd
import probe_check


def joined(gpu: dict, maya: dict) -> pd.DataFrame:
    """One row per (m, n, k, kind) in both files: measured_us, predicted_us, error, speedup."""
    keys = ["m", "n", "k", "kind"]
    measured = pd.DataFrame(gpu["rows"])[[*keys, "median_ms"]].rename(columns={"median_ms": "measured_ms"})
    predicted = pd.DataFrame(maya["rows"])[[*keys, "median_ms"]].rename(columns={"median_ms": "predicted_ms"})
    df = measured.merge(predicted, on=keys)
    if df.empty:
        raise SystemExit("float8_gemm_check: the two files share no (m, n, k, kind) row")
    df["measured_us"], df["predicted_us"] = df.measured_ms * 1000, df.predicted_ms * 1000
    df["error"] = (df.predicted_us - df.measured_us) / df.measured_us
    bf16 = df[df.kind == "bfloat16"].set_index(["m", "n", "k"]).measured_us
    df["speedup"] = [bf16.get((r.m, r.n, r.k), float("nan")) / r.measured_us for r in df.itertuples()]
    return df[[*keys, "measured_us", "predicted_us", "error", "speedup"]]


def report(df: pd.DataFrame, gpu_env: dict) -> str:
    lines = [probe_check.measured_on(gpu_env), "",
             "| M | N | K | kind | measured us | predicted us | error | measured speed-up over bfloat16 |",
             "|---:|---:|---:|---|---:|---:|---:|---:|"]
    for r in df.itertuples():
        lines.append(f"| {r.m} | {r.n} | {r.k} | {r.kind} | {r.measured_us:.1f} | {r.predicted_us:.1f} | "
                     f"{r.error:+.1%} | {r.speedup:.2f}x |")
    lines.append("")
    for kind, g in df.groupby("kind", sort=False):
        tw = (g.predicted_us - g.measured_us).abs().sum() / g.measured_us.sum()
        lines.append(f"- {kind}: median |error| {g.error.abs().median():.1%}, time-weighted {tw:.1%} over {len(g)} shapes")
    return "\n".join(lines)


if __name__ == "__main__":
    probe_check.main(__doc__, joined, report)
