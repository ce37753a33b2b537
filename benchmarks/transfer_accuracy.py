"""How well Maya's H200 -> H100 transfer predicts op times measured on an H100 (issue: kernel-time estimation).

    python benchmarks/transfer_accuracy.py [--out benchmarks/results/transfer_accuracy_h100.md]

Maya's models are fitted on H200 profiles only; a GPU without profiles of its own gets the H200 time
scaled by the catalog (`maya.estimator.estimate.transfer_ratio`). Op signatures measured on both GPUs
(benchmarks/gpu/session32_h100, one H100 lease, and the H200 files named below) score that scaling:

1. The transfer alone: each signature's measured H200 time scaled to the H100 by no factor, by the whole
   catalog ratio of its bounding resource (peak FLOP/s when compute-bound on the H200, else memory
   bandwidth: Maya's rule before session 32), and by `transfer_ratio` (only the share of the time that
   the resource's roofline time explains scales), against its measured H100 time. Three sets: the
   seed-1 held-out shapes (H200: `benchmarks/gpu/heldout_ops_h200`, convolutions and RNN as
   benchmarks/estimator_accuracy.py re-times them; H100: `heldout_ops_h100/`), the seed-0 random draws
   of the families whose shipped H200 rows of that seed were timed as the H100 ones were (H200: the
   shipped profiles; H100: `pairs_h100/`), and convolution seeds 217-222 (H200:
   `benchmarks/gpu/session31_h200/conv_draws_s31.parquet`; H100: `conv_pairs_h100/`).
2. Models and transfer: the seed-1 held-out H100 rows estimated by the shipped H200 models as
   benchmarks/estimator_accuracy.py estimates the H200 ones (signatures in the training profiles
   dropped; no exact table, no in-training calibration), times each rule's factor.

Each table gives per family the median |error| and the time-weighted error sum|pred - meas| / sum(meas).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import estimator_accuracy as ea  # noqa: E402

SESSION = ROOT / "benchmarks" / "gpu" / "session32_h100"
H100_HELDOUT = SESSION / "heldout_ops_h100"
H100_PAIRS = SESSION / "pairs_h100"
H100_CONV = SESSION / "conv_pairs_h100"
H200_CONV = ROOT / "benchmarks" / "gpu" / "session31_h200" / "conv_draws_s31.parquet"


def factors(rows: pa.Table, source_us: np.ndarray) -> dict[str, np.ndarray]:
    """Each rule's H200 -> H100 factor for `rows` (profile rows) whose H200 time is `source_us`."""
    from maya.estimator.estimate import resource_ratio, transfer_ratio
    from maya.estimator.features import extract_features
    from maya.estimator.roofline import peak_flops_per_s
    from maya.hardware import load_gpu

    source, target = load_gpu("h200"), load_gpu("h100")
    family = np.asarray(rows.column("family").to_pylist(), dtype=object)
    flops = np.nan_to_num(np.asarray(rows.column("flops").to_numpy(zero_copy_only=False), dtype=np.float64))
    bytes_ = np.nan_to_num(np.asarray(rows.column("bytes").to_numpy(zero_copy_only=False), dtype=np.float64))
    dtype = extract_features(rows, source)["dtype"].to_numpy(dtype=object)
    tf32 = np.asarray(rows.column("allow_tf32").to_numpy(zero_copy_only=False), dtype=bool)
    peak_source = peak_flops_per_s(source, dtype, family, allow_tf32=tf32)
    peak_target = peak_flops_per_s(target, dtype, family, allow_tf32=tf32)
    whole = resource_ratio(flops, bytes_, peak_source, peak_target, source, target)
    return {"none": np.ones(rows.num_rows), "whole ratio": whole,
            "share of ratio": transfer_ratio(source_us, flops, bytes_, peak_source, peak_target, source, target)}


def paired(h200: pa.Table, h100: pa.Table) -> pd.DataFrame:
    """One row per signature measured on both GPUs (the H200 table's first row of each): family, both
    measured times, and each rule's factor."""
    first = {}
    for i, key in enumerate(ea.profile_keys(h200).tolist()):
        first.setdefault(key, i)
    pairs = [(i, first[k]) for i, k in enumerate(ea.profile_keys(h100).tolist()) if k in first]
    rows = h200.take(pa.array([j for _, j in pairs], type=pa.int64()))
    h200_us = rows.column("duration_us").to_numpy()
    h100_us = h100.take(pa.array([i for i, _ in pairs], type=pa.int64())).column("duration_us").to_numpy()
    bytes_ = np.nan_to_num(np.asarray(rows.column("bytes").to_numpy(zero_copy_only=False), dtype=np.float64))
    return pd.DataFrame({"family": rows.column("family").to_pylist(), "h200_us": h200_us, "h100_us": h100_us,
                         "bytes": bytes_, **factors(rows, h200_us)})


def estimated() -> pd.DataFrame:
    """The held-out H100 rows (signatures in the training profiles dropped): family, measured H100 time
    as `h100_us`, the shipped models' H200 estimate as `h200_us` (benchmarks/estimator_accuracy.py's
    `evaluate`, which estimates without the exact table or in-training calibration), and each rule's
    factor on it."""
    h200, rows = ea.evaluate(H100_HELDOUT, ea.TRAINING, gpu="h200", retimed={}, with_rows=True)
    df = pd.DataFrame({"family": h200.family, "h200_us": h200.predicted_us, "h100_us": h200.measured_us,
                       **factors(rows, h200.predicted_us.to_numpy())})
    # what Maya's estimator gives for gpu="h100" is the H200 estimate times the rule it uses
    maya = ea.evaluate(H100_HELDOUT, ea.TRAINING, gpu="h100", retimed={}).predicted_us.to_numpy()
    np.testing.assert_allclose(maya, df.h200_us * df["share of ratio"], rtol=1e-9)
    return df


RULES = ("none", "whole ratio", "share of ratio")


def rule_table(df: pd.DataFrame) -> str:
    """Per family (and all), each rule's median |error| / time-weighted error."""
    lines = ["| family | signatures | " + " | ".join(f"{r}: median / time-weighted" for r in RULES) + " |",
             "|---|---:|" + "---:|" * len(RULES)]
    for family, g in [*df.groupby("family"), ("**all**", df)]:
        cells = []
        for rule in RULES:
            predicted = g.h200_us * g[rule]
            error = (predicted - g.h100_us).abs()
            cells.append(f"{(error / g.h100_us).median():.1%} / {error.sum() / g.h100_us.sum():.1%}")
        lines.append(f"| {family} | {len(g)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def ratio_table(df: pd.DataFrame, h200: pa.Table) -> str:
    """Measured H100 / H200 time per family (median and quartiles), and for the bandwidth-bound families
    (copy, elementwise, reduction, norm, softmax) by bytes moved."""
    ratio = df.h100_us / df.h200_us
    lines = ["| family | signatures | median H100 / H200 | 25% | 75% |", "|---|---:|---:|---:|---:|"]
    for family, r in [*ratio.groupby(df.family), ("**all**", ratio)]:
        lines.append(f"| {family} | {len(r)} | {r.median():.3f} | {r.quantile(0.25):.3f} | {r.quantile(0.75):.3f} |")
    streaming = df.family.isin(["copy", "elementwise", "reduction", "norm", "softmax"]).to_numpy()
    bins = pd.cut(df.bytes[streaming], [0, 1e6, 1e7, 1e8, 1e9, np.inf],
                  labels=["< 1 MB", "1-10 MB", "10-100 MB", "100 MB - 1 GB", "> 1 GB"])
    lines += ["", "| copy, elementwise, reduction, norm, softmax: bytes moved | signatures | median H100 / H200 |",
              "|---|---:|---:|"]
    for label, r in ratio[streaming].groupby(bins, observed=True):
        lines.append(f"| {label} | {len(r)} | {r.median():.3f} |")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=None, help="also write the tables (markdown) here")
    args = p.parse_args()

    h200_heldout = ea.retime(ea._read(ea.HELDOUT), ea.HELDOUT, ea.RETIMED)
    sets = [
        ("seed-1 held-out shapes", paired(h200_heldout, ea._read(H100_HELDOUT))),
        ("seed-0 draws", paired(ea._read(ea.TRAINING), ea._read(H100_PAIRS))),
        ("convolution seeds 217-222", paired(pq.read_table(H200_CONV),
                                             pa.concat_tables([pq.read_table(f) for f in sorted(H100_CONV.glob("*.parquet"))],
                                                              promote_options="default"))),
    ]
    parts = ["# H200 -> H100 transfer against H100 measurements", "",
             "- H100: NVIDIA H100 80GB HBM3, one lease (benchmarks/gpu/session32_h100/COMMANDS.md); H200: the files "
             "this script's docstring names. Both torch 2.11.0+cu130, cuDNN 91900.",
             "- Reproduce: `python benchmarks/transfer_accuracy.py --out benchmarks/results/transfer_accuracy_h100.md`", ""]
    parts += ["## Measured H100 time over H200 time: seed-1 held-out shapes", "", ratio_table(sets[0][1], h200_heldout), ""]
    for label, df in sets:
        parts += [f"## The transfer alone: {label}", "",
                  "Measured H200 time x rule's factor against the measured H100 time.", "", rule_table(df), ""]
    parts += ["## Models and transfer: seed-1 held-out shapes on the H100", "",
              "The shipped H200 models' estimate of each held-out H100 row (signatures in the training profiles dropped, "
              "no exact table or in-training calibration, as benchmarks/estimator_accuracy.py scores the H200) x each "
              "rule's factor, against the H100 time; `share of ratio` is what `maya` gives with `gpu=\"h100\"` (checked "
              "here against `estimate_trace`).", "", rule_table(estimated()), ""]
    body = "\n".join(parts)
    print(body)
    if args.out:
        args.out.write_text(body)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
