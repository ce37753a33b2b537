"""The fit's own held-out split, before and after new profile rows, under the model settings compared.

    python benchmarks/fit_choices.py --family sdpa --new sdpa_draws.parquet --settings shallow,shipped
    python benchmarks/fit_choices.py --family gemm --new gemm_draws.parquet --settings rmse,shipped
    python benchmarks/fit_choices.py --family conv --fractions 0.25,0.5,1


How the choices in maya/estimator/fit.py (`DEEP_FAMILIES`, `LOSS_BY_FAMILY`) and new random draws
were decided without the held-out set of benchmarks/estimator_accuracy.py. The *before* rows are the
family's rows in the profile directory without the `--new` files; `fit.holdout_mask` (seed 0, 20%)
picks whole signatures of them, the same split `maya fit` held out before the new rows existed.
Each setting is fitted on the rest (the before rows alone, then with the new rows, never a held-out
signature) and scored on those held-out signatures: median |error|, time-weighted error, and the
signed median error of ops under 10 us. Settings: `shipped` (what `maya fit` uses for the family),
`rmse` (shipped with RMSE loss), `mae` (shipped with MAE loss), `shallow` (depth 6, learning rate 0.08, 1,000 iterations, RMSE),
`deep` (the settings of `fit.DEEP_FAMILIES`: depth 8, learning rate 0.05, 2,000 iterations), `deeper` (shipped with depth 10), `deeper-half` (depth 10 with half the iterations: twice the
model size, where `deeper` is four times), `longer` (shipped with three times the boosting iterations), `faster` (shipped with twice the learning rate: as many trees, the same model size), `time-weighted` and `sqrt-time-weighted` (shipped, each training row
weighted by its measured time, or its square root: the time-weighted error weighs ops so), `fine-borders`
(shipped with 1,024 quantization borders per numeric feature instead of CatBoost's 254).
`--fractions` also fits the before rows' training part subsampled by signature (seeded), a learning
curve: whether more rows of the same kind (more random draws on a GPU) are likely to lower the error.
`--new` may then be left out. `--score-new` also holds out a fifth of the new rows' signatures (seed 0)
from every fit and scores them apart: whether new rows of a kind the rows before lack are learnt.
`--by-kind` scores convolutions of each kind (depthwise, grouped or dense; kernel side; forward or
backward) apart, and `--by-file` the held-out rows of each profile file (for convolutions the rows of
the fixed grid's CNN layers (`profile_grid.CONV_LAYERS`: ResNet's
and ViT's patch embedding, groups 1, at the grid's batch sizes) apart from the random draws), each
group with its share of the held-out time. `--cliffs RATIO` describes the held-out rows estimated at under
RATIO of their measured time (slow algorithm choices a model cannot see, for convolutions).
Runs on a CPU (CatBoost, 2 threads); a GEMM fit of 80,000 rows takes about two minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
PROFILES = ROOT / "maya" / "estimator" / "data" / "h200"


SETTINGS = ("shipped", "rmse", "mae", "shallow", "deep", "deeper", "deeper-half", "longer", "faster", "time-weighted",
            "sqrt-time-weighted", "fine-borders")
"""The model settings `--settings` may name (each defined in `settings`)."""


def settings(catboost, family: str, name: str, categorical: list[str]):
    from maya.estimator import fit

    shipped = fit._regressor(catboost, family, iterations=1000, seed=0, thread_count=2,
                             categorical=categorical).get_params()
    variants = {
        "shipped": shipped,
        "rmse": {**shipped, "loss_function": "RMSE"},
        "mae": {**shipped, "loss_function": "MAE"},
        "shallow": {**shipped, "loss_function": "RMSE", "depth": fit._DEPTH, "learning_rate": fit._LEARNING_RATE,
                    "iterations": 1000},
        "deeper": {**shipped, "depth": 10},
        "deep": {**shipped, "depth": fit._DEEP_DEPTH, "learning_rate": fit._DEEP_LEARNING_RATE,
                 "iterations": 1000 * fit._DEEP_ITERATIONS_FACTOR},
        "longer": {**shipped, "iterations": 3 * shipped["iterations"]},
        "faster": {**shipped, "learning_rate": 2 * shipped["learning_rate"]},
        "deeper-half": {**shipped, "depth": 10, "iterations": shipped["iterations"] // 2},
        "time-weighted": shipped,
        "sqrt-time-weighted": shipped,
        "fine-borders": {**shipped, "border_count": 1024},
    }
    return catboost.CatBoostRegressor(**variants[name])


WEIGHT_POWER = {"time-weighted": 1.0, "sqrt-time-weighted": 0.5}
"""Setting -> power of the measured time that weighs each training row (unweighted when absent)."""


def read_family(files: list[Path], family: str, new: list[str] = ()) -> pa.Table:
    """`family`'s rows of the profile `files`, in their order, with `is_new` (the file is one of `new`)
    and `source_file` columns."""
    parts = []
    for path in files:
        table = pq.read_table(path)
        table = table.filter(pc.equal(table.column("family"), family))
        table = table.append_column("is_new", pa.array(np.full(table.num_rows, path.name in new)))
        parts.append(table.append_column("source_file", pa.array(np.full(table.num_rows, path.name))))
    return pa.concat_tables(parts, promote_options="permissive")


def _subsample(keys: np.ndarray, fraction: float) -> np.ndarray:
    """Rows whose signature falls in a seeded `fraction` of all signatures (every row when it is 1)."""
    if fraction >= 1:
        return np.ones(len(keys), dtype=bool)
    from maya.estimator.fit import holdout_mask

    return holdout_mask(keys, fraction, 1)


def _conv_grid_layer(features) -> np.ndarray:
    """Whether each convolution row is one of the fixed grid's CNN layers (`CONV_LAYERS`, groups 1,
    dilation 1, batch 16, 64 or 256), read from its features (padding is not a feature: ignored)."""
    from maya.estimator.profile_grid import CONV_LAYERS

    f = features.reset_index(drop=True)
    layer = set()
    for cin, hw, cout, k, stride, _ in CONV_LAYERS:
        layer.add((round(np.log2(cin), 6), round(np.log2(hw), 6), round(np.log2(cout), 6), k * k, stride * stride))
    key = zip(f["log2_c_in"].round(6), f["log2_h_in"].round(6), f["log2_c_out"].round(6), f["kernel_numel"],
              f["stride_prod"])
    return (np.array([k in layer for k in key]) & (f["log2_groups"].to_numpy() == 0)
            & (f["dilation_prod"].to_numpy() == 1) & f["log2_batch"].isin([4.0, 6.0, 8.0]).to_numpy())


def _conv_kind(features) -> np.ndarray:
    """Each convolution row's kind, read from its features: depthwise, grouped or dense, the kernel's
    side, and forward or backward."""
    f = features.reset_index(drop=True)
    groups = np.where(f["depthwise"].to_numpy() > 0, "depthwise",
                      np.where(f["log2_groups"].to_numpy() > 0, "grouped", "dense"))
    side = np.sqrt(f["kernel_numel"].to_numpy()).round().astype(int)
    direction = np.where(f["is_backward"].to_numpy() > 0, "backward", "forward")
    return np.array([f"{g} {s}x{s} {d}" for g, s, d in zip(groups, side, direction)], dtype=object)


CLIFF_FEATURES = ("dtype", "kernel_numel", "stride_prod", "dilation_prod", "channels_last", "is_backward",
                  "depthwise", "align_c_in", "cudnn_benchmark", "rnn_mode", "bidirectional", "num_layers")


def _print_cliffs(predicted: np.ndarray, measured: np.ndarray, features, ratio: float) -> None:
    cliff = predicted / measured < ratio
    error = np.abs(predicted - measured)
    print(f"  estimated under {ratio:g} x measured: {int(cliff.sum())} of {len(cliff)} rows, "
          f"{measured[cliff].sum() / measured.sum():.1%} of the time, {error[cliff].sum() / error.sum():.1%} of the absolute error")
    for name in CLIFF_FEATURES:
        if name in features and features[name].notna().any():
            values = features[name].to_numpy()
            rates = ", ".join(f"{v}: {cliff[values == v].mean():.1%} of {int((values == v).sum())}"
                              for v in sorted(set(values[~features[name].isna().to_numpy()]), key=str))
            print(f"  by {name}: {rates}")


def _print_row(label: str, setting: str, predicted: np.ndarray, measured: np.ndarray, signed: str = "") -> None:
    """One Markdown row: median |error| and time-weighted error of `predicted` against `measured`."""
    from maya.estimator.fit import error_metrics

    m = error_metrics(predicted, measured)
    print(f"| {label} | {setting} | {m['median_ape']:.1%} | {m['time_weighted_error']:.1%} | {signed} |", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--family", required=True)
    p.add_argument("--new", nargs="*", default=[], help="file names in --profiles whose rows are the new ones")
    p.add_argument("--fractions", default="1",
                   help="comma-separated fractions of the before rows' training signatures to fit on (default 1)")
    p.add_argument("--settings", default="shipped", help=f"comma-separated: {', '.join(SETTINGS)}")
    p.add_argument("--profiles", type=Path, default=PROFILES)
    p.add_argument("--by-file", action="store_true", help="also score each profile file's held-out rows apart")
    p.add_argument("--score-new", action="store_true",
                   help="also hold out a fifth of the new rows' signatures, train without them, and score them apart "
                        "(for new rows of a kind the rows before lack)")
    p.add_argument("--by-kind", action="store_true",
                   help="convolutions: also score the held-out rows of each kind (depthwise or not, kernel size, pass) apart")
    p.add_argument("--cliffs", type=float, metavar="RATIO",
                   help="also describe the held-out rows estimated at under RATIO of their measured time: their "
                        "share of rows, time and absolute error, and their rate per value of a few features")
    args = p.parse_args()
    unknown = [name for name in args.settings.split(",") if name not in SETTINGS]
    if unknown:  # before any row is read or model fitted
        p.error(f"unknown setting(s) {', '.join(unknown)}; choose from {', '.join(SETTINGS)}")
    from maya.estimator.features import CATEGORICAL_FEATURES, extract_features, features_for_family, target_base_us
    from maya.estimator.fit import holdout_mask, import_catboost
    from maya.estimator.fit_report import from_target, to_target
    from maya.estimator.signature import signature_keys
    from maya.hardware import load_gpu

    catboost = import_catboost()
    files = sorted(args.profiles.glob("*.parquet"))
    missing = [n for n in args.new if not (args.profiles / n).is_file()]
    if missing:
        sys.exit(f"not in {args.profiles}: {', '.join(missing)}")
    rows = read_family(files, args.family, args.new)
    measured = rows.column("duration_us").to_numpy().astype(np.float64)
    is_new = rows.column("is_new").to_numpy(zero_copy_only=False)
    source_file = np.asarray(rows.column("source_file").to_pylist(), dtype=object)
    keys = signature_keys(rows)
    features = extract_features(rows, load_gpu("h200"))
    names = list(features_for_family(args.family))
    categorical = [n for n in names if n in CATEGORICAL_FEATURES]
    x = features[names].reset_index(drop=True)
    if args.by_file and args.family == "conv":
        source_file = np.where(_conv_grid_layer(features), source_file + " (grid CNN layers)", source_file)
    base_us = target_base_us(features, args.family)  # what each model predicts time relative to
    y = to_target(measured, base_us)
    held_keys = keys[~is_new][holdout_mask(keys[~is_new], 0.2, 0)]
    if args.score_new and is_new.any():
        held_keys = np.concatenate([held_keys, keys[is_new][holdout_mask(keys[is_new], 0.2, 0)]])
    held = np.isin(keys, held_keys)
    test = held & ~is_new
    test_new = held & is_new if args.score_new else np.zeros(len(keys), dtype=bool)
    groupings = []  # (each held-out row's group, its label): scored apart
    if args.by_file:
        groupings.append((source_file[test], "held-out rows of {}"))
    if args.by_kind and args.family == "conv":
        groupings.append((_conv_kind(features)[test], "held-out {}"))
    fractions = sorted({float(f) for f in args.fractions.split(",")})
    if not fractions or fractions[0] <= 0 or fractions[-1] > 1:
        sys.exit(f"--fractions must lie in (0, 1]: {args.fractions}")
    runs = [(f"before, {fraction:g} of it" if fraction < 1 else "before",
             ~held & ~is_new & _subsample(keys, fraction)) for fraction in fractions]
    if args.new:
        runs.append(("before + new", ~held))
    print(f"{args.family}: {int((~is_new).sum())} rows before, {int(is_new.sum())} new ({', '.join(args.new) or 'none'}); "
          f"scored on {int(test.sum())} held-out rows of the rows before"
          + (f" and {int(test_new.sum())} held-out new rows" if test_new.any() else ""))
    print("| rows trained on | setting | median abs error | time-weighted error | signed median error, ops < 10 us |")
    print("|---|---|---:|---:|---:|")
    for label, train in runs:
        for name in args.settings.split(","):
            model = settings(catboost, args.family, name, categorical)
            power = WEIGHT_POWER.get(name)
            weight = None if power is None else measured[train] ** power / np.mean(measured[train] ** power)
            model.fit(x[train], y[train], sample_weight=weight)
            predicted = from_target(model.predict(x[test]), base_us[test])
            small = measured[test] < 10
            relative = (predicted[small] - measured[test][small]) / measured[test][small]
            signed = f"{np.median(relative):+.1%}" if small.any() else "no such ops"
            _print_row(f"{label} ({int(train.sum())})", name, predicted, measured[test], signed)
            if test_new.any():
                new_predicted = from_target(model.predict(x[test_new]), base_us[test_new])
                _print_row(f"{label} ({int(train.sum())}), held-out new rows ({int(test_new.sum())})", name,
                           new_predicted, measured[test_new])
            if args.cliffs:
                _print_cliffs(predicted, measured[test], features.iloc[np.flatnonzero(test)], args.cliffs)
            for groups, what in groupings:
                for group in sorted(set(groups)):
                    mine = groups == group
                    share = measured[test][mine].sum() / measured[test].sum()
                    _print_row(f"{label}, {what.format(group)} ({int(mine.sum())}, {share:.1%} of the time)", name,
                               predicted[mine], measured[test][mine])


if __name__ == "__main__":
    main()
