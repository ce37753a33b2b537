"""`fit_models`: train one CatBoost GPU-time model per op family from a profile directory.

    fit_models("maya/estimator/data/h200", "maya/estimator/data/h200/models")

reads `<profile_dir>/*.parquet` (the profiler's `<family>.parquet` files and `exact.parquet`) and
writes `<out_dir>/<family>.cbm.gz` (CatBoost's own model file, gzip-compressed: a quarter of the size),
`<out_dir>/exact_durations.parquet` (unless `exact_table=False`) and `<out_dir>/fit_report.json`.
Each model predicts log(duration_us / base_us) (`fit_report.TARGET`) from
`features.extract_features`. Whole signatures are held out
(seeded), so held-out metrics measure shapes the model never saw. The shipped model is then refitted
on all rows with the same settings.
"""

from __future__ import annotations

import gzip
import logging
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from maya.estimator.exact_table import EXACT_FILE, ExactTable
from maya.estimator.features import CATEGORICAL_FEATURES, extract_features, features_for_family, target_base_us
from maya.estimator.fit_report import REPORT_FILE, FamilyFit, FitReport, from_target, to_target
from maya.estimator.roofline import peak_flops_per_s, roofline_duration_us
from maya.estimator.signature import _mix, signature_keys
from maya.hardware import GpuSpec, load_gpu

logger = logging.getLogger(__name__)

MIN_HOLDOUT_SIGNATURES = 5
"""A family with fewer distinct signatures is trained on all of them and gets no held-out metrics."""

_DEPTH = 6
_LEARNING_RATE = 0.08
DEEP_FAMILIES = frozenset({"gemm", "conv", "rnn", "sdpa", "norm"})
"""Families fitted with deeper trees (depth 8, twice the iterations, learning rate 0.05): GEMM and
convolution, with the most rows and the most shape parameters, cuDNN's RNNs (6,700 rows, whose time
depends on the product of steps, layers and directions), and attention once it had 8,560 rows. Chosen
on the fit's own held-out split (`fit_report.json`), never on benchmarks/gpu/heldout_ops_h200: there
GEMM went from 6.9% median / 5.8% time-weighted error to 6.2% / 5.3%, convolution from 19.3% / 24.8%
to 17.3% / 22.3%, RNN (with the draws of `rnn_draws.parquet`, on the split of the rows before them)
from 14.4% / 17.6% to 13.4% / 17.3% (2026-11-30, the H200 profiles). Attention, with the draws of
`sdpa_draws.parquet`, on the signatures that split held out of the rows before them: 3.3% / 2.9%
shallow, 2.5% / 3.1% deep (3.5% / 3.9% and 3.2% / 3.5% without the draws; benchmarks/fit_choices.py,
benchmarks/results/fit_choices_h200.md). Normalisation since session 24, with the channel layer norms
(`norm_channel_layer_norms.parquet`): 4.9% / 8.2% -> 4.2% / 7.2% on the held-out signatures of the
rows before them, 11.9% / 16.4% -> 10.4% / 17.6% on those of the new rows."""
_DEEP_DEPTH, _DEEP_ITERATIONS_FACTOR, _DEEP_LEARNING_RATE = 8, 2, 0.05
DEPTH_BY_FAMILY = {"rnn": 10, "conv": 10}
"""Tree depth of deep families fitted deeper still: depth 10 instead of 8 (2,000 iterations, learning
rate 0.05 either way), chosen on the fit's own held-out split (session 29,
benchmarks/results/fit_choices_h200.md). cuDNN's RNNs: 5.4% median / 10.0% time-weighted error against
5.7% / 10.3% on the split of the 18,988 shipped rows (3,882 held out), where 6,000 iterations at depth
8 gave 5.5% / 10.0% and time weighting was worse (`python benchmarks/fit_choices.py --family rnn
--settings shipped,deeper,longer,sqrt-time-weighted,time-weighted`). Convolutions: 9.4% / 20.6% against
10.1% / 22.2% on the split of the 206,708 shipped rows (41,427 held out; `--family conv --settings
shipped,deeper`). The attention model at depth 10 did better on its split but worse on the
calibration workloads, and stays at 8."""
ITERATIONS_FACTOR_BY_FAMILY = {"conv": 3}
"""Deep families fitted with more boosting iterations still (times the deep families' 2,000, learning
rate 0.05 either way), chosen on the fit's own held-out split (session 30,
benchmarks/results/fit_choices_h200.md): convolutions at depth 10 with 6,000 iterations, 9.1% median /
19.9% time-weighted error against 9.4% / 20.6% with 2,000 on the split of the 206,708 shipped rows
(41,427 held out; `python benchmarks/fit_choices.py --family conv --settings shipped,longer`); the model
file is about three times larger."""
LOSS_BY_FAMILY = {"gemm": "MAE", "conv": "MAE"}
"""CatBoost loss per family (default RMSE on the log target). GEMM fits the median of log(duration /
roofline) (MAE) instead of its mean. Chosen on the fit's own held-out split (benchmarks/fit_choices.py,
benchmarks/results/fit_choices_h200.md), on the signatures it held out of the rows before
`gemm_draws.parquet`: with the draws, 5.2% median / 4.9% time-weighted error with RMSE, 5.0% / 4.8%
with MAE; without them MAE was better on the median (6.2% -> 5.8%) but worse time-weighted (5.3% ->
5.6%). Convolution too, on the signatures its split held out of the rows before `conv_draws_2.parquet`:
17.9% / 25.4% with RMSE, 14.3% / 25.3% with MAE (small ops' signed median error +22.8% -> +8.8%), and
14.1% / 24.3% with MAE and the draws. The other families keep RMSE (MAE not compared for them here)."""


def import_catboost():
    """Import catboost, or fail with the command that installs it."""
    try:
        import catboost
    except ImportError as error:
        raise ImportError("the estimator needs CatBoost: pip install 'catboost>=1.2'") from error
    return catboost


def read_profiles(profile_dir: str | os.PathLike) -> pa.Table:
    """Every profile row under `profile_dir` (all `*.parquet` files), as one Arrow table."""
    files = sorted(Path(profile_dir).glob("*.parquet"))
    if not files:
        raise FileNotFoundError(f"no profile Parquet files in {profile_dir} (run `maya profile` on a GPU)")
    return pa.concat_tables([pq.read_table(path) for path in files], promote_options="permissive")


def _resolve_gpu(profiles: pa.Table, gpu: str | None) -> tuple[GpuSpec, str]:
    names = sorted(set(profiles.column("gpu_name").to_pylist())) if "gpu_name" in profiles.column_names else []
    if len(names) > 1:
        raise ValueError(f"profiles mix GPUs {names}; fit one GPU's profiles at a time")
    name = names[0] if names else ""
    if gpu is not None:
        return load_gpu(gpu), name
    try:
        return load_gpu(name), name
    except ValueError as error:
        raise ValueError(f"profiles were recorded on {name!r}, not a catalog GPU; pass gpu=<catalog key>") from error


MODEL_SUFFIX = ".cbm.gz"
"""Model file of a family: `<family>.cbm.gz`, CatBoost's .cbm file compressed with gzip (its leaf
values compress about 4x; the deep models are 8.5 MB as .cbm)."""


def save_model(model, path: Path) -> None:
    """Write a fitted CatBoost model to `path` as a gzip-compressed .cbm, and remove an uncompressed
    `<family>.cbm` left beside it (a directory holds one file per family)."""
    raw = path.with_suffix("")  # <family>.cbm
    model.save_model(str(raw))
    path.write_bytes(gzip.compress(raw.read_bytes(), compresslevel=9, mtime=0))
    raw.unlink()


def load_model(catboost, directory: Path, family: str):
    """A family's model from `directory`: `<family>.cbm.gz`, else an uncompressed `<family>.cbm`.

    Raises:
        FileNotFoundError: neither file exists; the message names both.
    """
    model = catboost.CatBoostRegressor()
    compressed, raw = directory / f"{family}{MODEL_SUFFIX}", directory / f"{family}.cbm"
    if compressed.exists():
        model.load_model(blob=gzip.decompress(compressed.read_bytes()))
    elif raw.exists():
        model.load_model(str(raw))
    else:
        raise FileNotFoundError(
            f"no model for family {family!r} in {directory}: neither {compressed.name} nor {raw.name}")
    return model


def holdout_mask(keys: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    """Which rows to hold out: a seeded hash of the signature key picks whole signatures.

    At least one signature lands on each side when there are `MIN_HOLDOUT_SIGNATURES` or more.
    """
    unique = np.unique(keys)
    if fraction <= 0 or len(unique) < MIN_HOLDOUT_SIGNATURES:
        return np.zeros(len(keys), dtype=bool)
    draw = (_mix(unique ^ np.uint64(seed)) >> np.uint64(11)).astype(np.float64) / 2.0**53
    held = draw < fraction
    if not held.any():
        held[np.argmin(draw)] = True
    if held.all():
        held[np.argmax(draw)] = False
    return np.isin(keys, unique[held])


def error_metrics(predicted_us: np.ndarray, measured_us: np.ndarray) -> dict[str, float]:
    """MAPE, median APE and time-weighted error (sum|p - m| / sum m), each as a fraction."""
    absolute = np.abs(predicted_us - measured_us)
    relative = absolute / measured_us
    return {
        "mape": float(np.mean(relative)),
        "median_ape": float(np.median(relative)),
        "time_weighted_error": float(absolute.sum() / measured_us.sum()),
    }


def _regressor(catboost, family: str, *, iterations: int, seed: int, thread_count: int, categorical: list[str]):
    depth, learning_rate = _DEPTH, _LEARNING_RATE
    if family in DEEP_FAMILIES:
        depth, learning_rate, iterations = _DEEP_DEPTH, _DEEP_LEARNING_RATE, iterations * _DEEP_ITERATIONS_FACTOR
        depth = DEPTH_BY_FAMILY.get(family, depth)
        iterations *= ITERATIONS_FACTOR_BY_FAMILY.get(family, 1)
    return catboost.CatBoostRegressor(
        loss_function=LOSS_BY_FAMILY.get(family, "RMSE"), iterations=iterations, depth=depth,
        learning_rate=learning_rate, random_seed=seed, thread_count=thread_count, cat_features=categorical,
        verbose=False, allow_writing_files=False,
    )


def _only_families(profiles: pa.Table, wanted: set[str], out_dir: Path, exact_table: bool) -> tuple[pa.Table, FitReport]:
    """The rows of the `wanted` families, and the report of `out_dir` that their new models join."""
    if exact_table:
        raise ValueError("refitting some families (--families) needs --no-exact-table: the exact table covers every family")
    present = set(profiles.column("family").to_pylist())
    unknown = sorted(wanted - present)
    if unknown:
        raise ValueError(f"no profile rows of famil{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)} "
                         f"(the profiles have {', '.join(sorted(present))})")
    if not (out_dir / REPORT_FILE).exists():
        raise ValueError(f"{out_dir} has no {REPORT_FILE} to keep the other families' models from; "
                         "fit every family first (leave out --families)")
    keep = pc.is_in(profiles.column("family"), value_set=pa.array(sorted(wanted)))
    return profiles.filter(keep), FitReport.load(out_dir)


def fit_models(
    profile_dir: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    seed: int = 0,
    holdout_fraction: float = 0.2,
    gpu: str | None = None,
    iterations: int = 1000,
    thread_count: int = 4,
    exact_table: bool = True,
    families: Iterable[str] | None = None,
) -> FitReport:
    """Train and save one CatBoost model per op family; return the held-out report.

    Args:
        profile_dir: directory of profile Parquet files (`<family>.parquet`, `exact.parquet`).
        out_dir: directory to write `<family>.cbm.gz`, `exact_durations.parquet` and `fit_report.json`.
        seed: seed of the held-out split and of CatBoost.
        holdout_fraction: fraction of each family's distinct signatures held out for evaluation.
        gpu: catalog key of the GPU the profiles came from; default: their `gpu_name` column.
        iterations: CatBoost boosting iterations per model (twice as many for `DEEP_FAMILIES`).
        thread_count: CatBoost threads; fixed so that the same inputs give the same models.
        exact_table: also write the profile rows' medians as `exact_durations.parquet`, which
            estimation looks up before the models; False removes an existing one. The shipped H200
            models are fitted without: one isolated timing of a signature can be far from another
            (GPT-2's bf16 [16384, 768] x [768, 2304] addmm: 112.2 us in the grid, 92.6 us in a run
            five minutes later), the model fitted to every timing smooths that out, and without the
            table the calibration workloads' paired kernel time fits 2.7% instead of 3.7%
            (`python benchmarks/calibrate.py` before and after 0935905).

        families: refit only these families (each model depends only on its family's rows, so the
            result equals a full fit's models of them) and keep the other models in `out_dir`: their
            entries of its `fit_report.json`, which must exist and record the same settings, stay.
            Needs `exact_table=False`, as the exact table covers every family.

    Returns:
        The `FitReport`, also saved as `<out_dir>/fit_report.json`.
    """
    catboost = import_catboost()
    profiles = read_profiles(profile_dir)
    previous = None
    if families is not None:
        profiles, previous = _only_families(profiles, set(families), Path(out_dir), exact_table)
    spec, gpu_name = _resolve_gpu(profiles, gpu)
    if previous is not None:
        now = {"gpu": spec.key, "gpu_name": gpu_name, "catboost_version": catboost.__version__, "seed": seed,
               "holdout_fraction": holdout_fraction, "iterations": iterations, "thread_count": thread_count}
        differ = [f"{name} {getattr(previous, name)!r} there, {value!r} now" for name, value in now.items()
                  if getattr(previous, name) != value]
        if differ:
            raise ValueError(f"{out_dir}: its models were fitted with other settings ({'; '.join(differ)}); "
                             "refit every family (leave out --families)")
    measured = np.asarray(profiles.column("duration_us").to_numpy(zero_copy_only=False), dtype=np.float64)
    valid = np.isfinite(measured) & (measured > 0)
    if not valid.all():
        logger.warning("dropping %d profile rows without a positive duration_us", int((~valid).sum()))
        profiles, measured = profiles.filter(pa.array(valid)), measured[valid]

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    keys = signature_keys(profiles)
    if exact_table:
        ExactTable.from_profiles(profiles).save(out / EXACT_FILE)
    else:
        (out / EXACT_FILE).unlink(missing_ok=True)
    features = extract_features(profiles, spec)
    # The profiler's family column is the truth for training; the estimator routes by op name.
    families = np.asarray(profiles.column("family").to_numpy(zero_copy_only=False), dtype=object)
    flops = np.asarray(profiles.column("flops").to_numpy(zero_copy_only=False), dtype=np.float64)
    bytes_ = np.asarray(profiles.column("bytes").to_numpy(zero_copy_only=False), dtype=np.float64)
    base = target_base_us(features, families)

    fits = {}
    for family in sorted(set(families)):
        rows = np.flatnonzero(families == family)
        names = list(features_for_family(family))
        categorical = [name for name in names if name in CATEGORICAL_FEATURES]
        x = features.iloc[rows][names].reset_index(drop=True)
        base_us = base[rows]
        y = to_target(measured[rows], base_us)
        held = holdout_mask(keys[rows], holdout_fraction, seed)
        metrics: dict[str, float | None] = dict.fromkeys(("mape", "median_ape", "time_weighted_error"))
        roofline_error = None
        if held.any():
            model = _regressor(catboost, family, iterations=iterations, seed=seed, thread_count=thread_count,
                               categorical=categorical)
            model.fit(x[~held], y[~held])
            predicted = from_target(model.predict(x[held]), base_us[held])
            metrics = error_metrics(predicted, measured[rows][held])
            peak = peak_flops_per_s(spec, features["dtype"].to_numpy()[rows][held], families[rows][held])
            roofline = roofline_duration_us(flops[rows][held], bytes_[rows][held], peak,
                                            spec.memory_bandwidth_bytes_per_s)
            roofline_error = error_metrics(roofline, measured[rows][held])["time_weighted_error"]
        model = _regressor(catboost, family, iterations=iterations, seed=seed, thread_count=thread_count,
                           categorical=categorical)
        model.fit(x, y)
        save_model(model, out / f"{family}{MODEL_SUFFIX}")
        params = model.get_params()
        fits[family] = FamilyFit(
            family=family, rows=len(rows), signatures=len(np.unique(keys[rows])), holdout_rows=int(held.sum()),
            holdout_signatures=len(np.unique(keys[rows][held])), features=tuple(names),
            categorical_features=tuple(categorical),
            ops=tuple(sorted(set(profiles.column("op").take(pa.array(rows)).to_pylist()))),
            roofline_time_weighted_error=roofline_error, depth=params["depth"], loss_function=params["loss_function"],
            iterations=params["iterations"], **metrics,
        )
        logger.info("fitted %s on %d rows; held-out time-weighted error %s", family, len(rows),
                    metrics["time_weighted_error"])

    torch_versions = set(profiles.column("torch_version").to_pylist()) if "torch_version" in profiles.column_names else set()
    report = FitReport(
        gpu=spec.key, gpu_name=gpu_name,
        torch_versions=tuple(sorted(torch_versions | set(previous.torch_versions if previous else ()))),
        catboost_version=catboost.__version__, seed=seed, holdout_fraction=holdout_fraction,
        iterations=iterations, thread_count=thread_count,
        families={**(previous.families if previous else {}), **fits},
    )
    report.save(out)
    return report
