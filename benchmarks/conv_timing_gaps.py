"""How much of a convolution's profiled time is the GPU's, and how well that timing repeats.

    python benchmarks/conv_timing_gaps.py

`maya profile` times an op with CUDA events around it on an otherwise idle GPU (the L2 flushed
before each run). For an op that launches several kernels with host work between them (a cuDNN
convolution backward: data gradient, weight gradient, reductions), the events also time the GPU
waiting for those launches. Two checks, on the shipped and committed H200 profiles:

1. The convolution draws of benchmarks/gpu/conv_kernels_h200/run2 carry the kernels each op launched
   (`kernels`: [name, device us], from one torch.profiler run): per band of profiled time, the
   profiled time over the sum of its kernels' device time.
2. The same signatures timed in two sessions (the held-out set and its repeat; the convolution draws
   of seeds 46-52 of `conv_draws_2.parquet`, session 10, and `conv_draws_3.parquet`, session 18):
   per band, the median ratio of the two timings and the share of signatures more than 10% apart.

With `--fit`, also the fit's own split (benchmarks/fit_choices.py, shipped settings) of a convolution
model trained on those run2 rows alone, once on their profiled times and once on their kernel sums:
how much more learnable the GPU's own time is (two CatBoost fits, about two minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
GPU = ROOT / "benchmarks" / "gpu"
DATA = ROOT / "maya" / "estimator" / "data" / "h200"
BANDS = [0, 10, 30, 100, 300, 1000, 10_000, 1e9]


def _band(us: pd.Series) -> pd.Series:
    return pd.cut(us, BANDS, labels=[f"{a:g}-{b:g} us" if b < 1e9 else f"> {a:g} us" for a, b in zip(BANDS, BANDS[1:])])


def _timings(path: Path) -> pd.DataFrame:
    from maya.estimator.signature import signature_keys

    table = pq.read_table(path)
    frame = pd.DataFrame({"key": signature_keys(table), "us": table.column("duration_us").to_numpy()})
    return frame.groupby("key").us.median()


def _kernel_us(texts) -> np.ndarray:
    return np.array([sum(us for _, us in json.loads(text)) for text in texts])


def kernel_share() -> pd.DataFrame:
    rows = pd.concat([pq.read_table(p, columns=["duration_us", "kernels"]).to_pandas()
                      for p in sorted((GPU / "conv_kernels_h200" / "run2").glob("*.parquet"))])
    kernel_us = pd.Series(_kernel_us(rows.kernels), index=rows.index)
    ratio = rows.duration_us / kernel_us
    return ratio.groupby(_band(rows.duration_us), observed=True).agg(
        ops="size", median_ratio="median", p90_ratio=lambda r: r.quantile(0.9),
        over_10pct=lambda r: (r > 1.1).mean())


def repeat(first: Path, second: Path) -> pd.DataFrame:
    both = pd.concat([_timings(first).rename("first"), _timings(second).rename("second")], axis=1, join="inner")
    ratio = both.second / both.first
    return ratio.groupby(_band(both.first), observed=True).agg(
        signatures="size", median_ratio="median", apart_over_10pct=lambda r: (np.abs(r - 1) > 0.1).mean())


def fit_both_targets() -> None:
    import pyarrow as pa

    table = pa.concat_tables([pq.read_table(p) for p in sorted((GPU / "conv_kernels_h200" / "run2").glob("*.parquet"))])
    kernel_us = _kernel_us(table.column("kernels").to_pylist())
    table = table.drop(["kernels"])
    with tempfile.TemporaryDirectory() as tmp:
        for label, target in (("profiled time", None), ("kernel sum", kernel_us)):
            out = Path(tmp) / label.replace(" ", "_")
            out.mkdir()
            rows = table if target is None else table.set_column(
                table.column_names.index("duration_us"), "duration_us", pa.array(target))
            pq.write_table(rows, out / "conv_run2.parquet")
            print(f"3. A convolution model of run2's rows alone, trained and scored on their {label}:", flush=True)
            subprocess.run([sys.executable, str(ROOT / "benchmarks" / "fit_choices.py"), "--family", "conv",
                            "--profiles", str(out)], check=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fit", action="store_true", help="also fit a model on run2's profiled times and on their kernel sums")
    args = p.parse_args()
    pd.set_option("display.float_format", "{:.3f}".format)
    print("1. Profiled time / the sum of its kernels' device time (conv_kernels_h200/run2, seeds 56-65):")
    print(kernel_share().to_string(), "\n")
    pairs = [("held-out set, two sessions", GPU / "heldout_ops_h200" / "conv.parquet",
              GPU / "heldout_ops_h200_repeat" / "conv.parquet"),
             ("seeds 46-52, sessions 10 and 18", DATA / "conv_draws_2.parquet", DATA / "conv_draws_3.parquet")]
    for label, first, second in pairs:
        print(f"2. Second timing / first, {label} (bands by the first timing):")
        print(repeat(first, second).to_string(), "\n")
    if args.fit:
        fit_both_targets()


if __name__ == "__main__":
    main()
