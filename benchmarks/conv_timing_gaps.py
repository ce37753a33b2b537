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

With `--sleep DIR` (a device call's output, benchmarks/gpu/session19_h200/s19a): the same convolutions
timed idle and behind a GPU sleep (`maya profile --sleep-before`) on one machine, per band, and how
learnable each timing is: one model on the sleep-timed grid quarter and draws, scored on the held-out
seed-1 set timed behind the sleep, against one on the same grid signatures' idle timings
(conv.parquet) and as many idle draw rows (conv_draws_2.parquet), scored on the same held-out set timed
idle on that machine (two CatBoost fits, a few minutes on 2 cores). The idle rows are older sessions'
and the sleep-timed rows that machine's, so the idle timing's session-to-session noise is part of the
idle model's error: the noise the sleep removes. With `--sleep-repeat DIR2` too
(another lease's output, benchmarks/gpu/session19_h200/s19b): whether each timing repeats across
leases: the held-out set behind the sleep on both leases, and timed idle on `DIR`'s lease against its
first timing (benchmarks/gpu/heldout_ops_h200, session 3).
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


def _sleep_tables(sleep_dir: Path):
    """The sleep-timed training rows (grid shards and draws) and both held-out timings of `sleep_dir`."""
    import pyarrow as pa

    train = [p for pattern in ("grid_sleep_*/conv.parquet", "draws/conv_seed*/conv.parquet")
             for p in sorted(sleep_dir.glob(pattern))]
    if not train:
        raise SystemExit(f"no grid_sleep_*/conv.parquet or draws/conv_seed*/conv.parquet under {sleep_dir}")
    return (pa.concat_tables([pq.read_table(p) for p in train], promote_options="permissive"),
            pq.read_table(sleep_dir / "heldout_idle" / "conv.parquet"),
            pq.read_table(sleep_dir / "heldout_sleep" / "conv.parquet"))


def _idle_counterpart(sleep_train):
    """Idle timings of a like training set: the grid rows of `sleep_train`'s signatures from the shipped
    conv.parquet, and the first rows of conv_draws_2.parquet (other seeds, same generator) up to as many
    as `sleep_train` has draws."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from maya.estimator.signature import signature_keys

    grid = pq.read_table(DATA / "conv.parquet")
    grid = grid.filter(pa.array(np.isin(signature_keys(grid), signature_keys(sleep_train))))
    draws = pq.read_table(DATA / "conv_draws_2.parquet")
    draws = draws.filter(pc.equal(draws.column("family"), "conv")).slice(0, max(sleep_train.num_rows - grid.num_rows, 0))
    return pa.concat_tables([grid, draws], promote_options="permissive")


def _fit_and_score(train, test) -> dict[str, float]:
    """A convolution model with the shipped settings fitted on `train`, scored on `test`."""
    from maya.estimator.features import CATEGORICAL_FEATURES, extract_features, features_for_family, target_base_us
    from maya.estimator.fit import _regressor, error_metrics, import_catboost
    from maya.estimator.fit_report import from_target, to_target
    from maya.hardware import load_gpu

    catboost = import_catboost()
    names = list(features_for_family("conv"))
    model = _regressor(catboost, "conv", iterations=1000, seed=0, thread_count=2,
                       categorical=[n for n in names if n in CATEGORICAL_FEATURES])
    gpu = load_gpu("h200")
    x, x_test = extract_features(train, gpu), extract_features(test, gpu)
    model.fit(x[names].reset_index(drop=True), to_target(train.column("duration_us"), target_base_us(x, "conv")))
    predicted = from_target(model.predict(x_test[names].reset_index(drop=True)), target_base_us(x_test, "conv"))
    return error_metrics(predicted, test.column("duration_us").to_numpy().astype(np.float64))


def sleep_timing(sleep_dir: Path) -> None:
    sleep_train, held_idle, held_sleep = _sleep_tables(sleep_dir)
    print(f"4. Held-out seed-1 convolutions on one machine ({sleep_dir.name}): timed behind a GPU sleep / timed idle "
          "(bands by the idle timing):")
    print(repeat(sleep_dir / "heldout_idle" / "conv.parquet", sleep_dir / "heldout_sleep" / "conv.parquet").to_string(), "\n")
    idle_train = _idle_counterpart(sleep_train)
    print("5. A convolution model per timing, scored on the held-out set timed the same way (shipped settings):")
    print("| timing | rows trained on | held-out rows | median abs error | time-weighted error |")
    print("|---|---:|---:|---:|---:|")
    for label, train, test in (("behind a GPU sleep", sleep_train, held_sleep), ("idle GPU", idle_train, held_idle)):
        m = _fit_and_score(train, test)
        print(f"| {label} | {train.num_rows} | {test.num_rows} | {m['median_ape']:.1%} | {m['time_weighted_error']:.1%} |",
              flush=True)


def sleep_repeat(sleep_dir: Path, again_dir: Path) -> None:
    print(f"6. Held-out seed-1 convolutions behind a GPU sleep, {again_dir.name} / {sleep_dir.name} (two leases):")
    print(repeat(sleep_dir / "heldout_sleep" / "conv.parquet", again_dir / "heldout_sleep" / "conv.parquet").to_string(), "\n")
    print(f"7. The same timed idle, {sleep_dir.name} / heldout_ops_h200 (two sessions):")
    print(repeat(GPU / "heldout_ops_h200" / "conv.parquet", sleep_dir / "heldout_idle" / "conv.parquet").to_string(), "\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fit", action="store_true", help="also fit a model on run2's profiled times and on their kernel sums")
    p.add_argument("--sleep", type=Path, metavar="DIR",
                   help="also compare idle and sleep-timed convolutions of a device call's output DIR")
    p.add_argument("--sleep-repeat", type=Path, metavar="DIR2",
                   help="with --sleep: another lease's output, which timed the held-out set behind the sleep again")
    args = p.parse_args()
    if args.sleep_repeat and not args.sleep:
        p.error("--sleep-repeat needs --sleep")
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
    if args.sleep:
        sleep_timing(args.sleep)
    if args.sleep_repeat:
        sleep_repeat(args.sleep, args.sleep_repeat)


if __name__ == "__main__":
    main()
