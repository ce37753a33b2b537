"""Quick trials of convolution-model changes on a quarter of the fit's own split (issue: kernel-time estimation).

    python benchmarks/conv_feature_trials.py [--fraction 0.25] [--iterations 1000] [--learning-rate 0.15]
        [TRIAL ...]

benchmarks/fit_choices.py fits at the shipped size (6,000 iterations at depth 10 on 165,000 rows:
about 23 minutes on 2 cores). This script compares changes at a fraction of that cost: the same
held-out signatures (`fit.holdout_mask`, seed 0, 20% of the shipped convolution rows), trained on a
seeded `--fraction` of the other signatures, with `--iterations` trees at `--learning-rate`, depth 10
and MAE loss as shipped; every trial at the same budget, so only their differences mean anything.

A TRIAL is `base` (the shipped features), `base+GROUP[+GROUP...]` with extra features, or
`grow=Depthwise` / `grow=Lossguide` (CatBoost's non-symmetric trees, 256 leaves for Lossguide, on the
shipped features). Feature groups, each read from the rows' shapes and arguments:
- `geom`: kernel height and width, stride and padding along H, and log2 of the output's H and W and the
  input's W (the shipped features have products and the input's H only);
- `bwdgemm`: log2 M, N, K of the backward-data and backward-weight implicit GEMMs, and which gradients
  a backward call computes;
- `waves`: per tile size 128x128, 128x256 and 64x128 of the forward implicit GEMM, log2 of the waves
  of tiles over the H200's 132 SMs and the last wave's fill;
- `regime`: one categorical of dtype, kernel side, stride, direction and gradients, layout and kind
  (dense, grouped, depthwise).
Prints one line per trial: held-out median |error| and time-weighted error, and the fit's seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
PROFILES = ROOT / "maya" / "estimator" / "data" / "h200"
SMS = 132
"""Streaming multiprocessors of the H200 (catalog `multiprocessor_count`)."""
TILES = ((128, 128), (128, 256), (64, 128))


def _extras(rows: pa.Table) -> pd.DataFrame:
    """The extra feature groups of every convolution row (module docstring)."""
    from maya.estimator.features import _CONV_ARGS, _arg, _tensor_shape

    out = []
    for op, shapes, strides, out_shapes, attrs_text, dtypes in zip(
            rows.column("op").to_pylist(), rows.column("input_shapes").to_pylist(),
            rows.column("input_strides").to_pylist(), rows.column("output_shapes").to_pylist(),
            rows.column("attrs").to_pylist(), rows.column("input_dtypes").to_pylist()):
        attrs = json.loads(attrs_text or "{}")
        base = op.split(".", 1)[0]
        x_pos, w_pos, stride_pos, pad_pos, _, _, groups_pos, mask_pos = _CONV_ARGS[base]
        x = _tensor_shape(_arg(attrs, x_pos, "input"), shapes)
        w = _tensor_shape(_arg(attrs, w_pos, "weight"), shapes)
        backward = base == "aten::convolution_backward"
        y = (_tensor_shape(_arg(attrs, 0, "grad_output"), shapes) if backward else (out_shapes or [None])[0]) or [1, 1, 1, 1]
        groups = int(_arg(attrs, groups_pos, "groups", 1) or 1)
        stride = _arg(attrs, stride_pos, "stride", [1, 1])
        pad = _arg(attrs, pad_pos, "padding", [0, 0])
        stride, pad = (stride if isinstance(stride, list) else [stride]), (pad if isinstance(pad, list) else [pad])
        mask = _arg(attrs, mask_pos, "output_mask", [True, True, True]) if mask_pos is not None else []
        batch, c_in, c_out = x[0], x[1], w[0]
        kernel = int(np.prod(w[2:]))
        h_in, w_in = x[2], (x[3] if len(x) > 3 else 1)
        h_out, w_out = (y[2] if len(y) > 2 else 1), (y[3] if len(y) > 3 else 1)
        cin_g, cout_g = c_in // groups, c_out // groups
        m, n = batch * h_out * w_out, cout_g
        row = {
            "kh": w[2], "kw": w[3] if len(w) > 3 else 1, "sh": stride[0], "ph": pad[0],
            "log2_ho": np.log2(max(h_out, 1)), "log2_wo": np.log2(max(w_out, 1)), "log2_wi": np.log2(max(w_in, 1)),
            "log2_dg_m": np.log2(max(batch * h_in * w_in, 1)), "log2_dg_n": np.log2(max(cin_g, 1)),
            "log2_dg_k": np.log2(max(cout_g * kernel, 1)), "log2_wg_m": np.log2(max(cout_g, 1)),
            "log2_wg_n": np.log2(max(cin_g * kernel, 1)), "log2_wg_k": np.log2(max(m, 1)),
            "mask_in": float(bool(mask[0])) if backward else 0.0, "mask_w": float(bool(mask[1])) if backward else 0.0,
        }
        for bm, bn in TILES:
            waves = np.ceil(m / bm) * np.ceil(n / bn) / SMS
            row[f"waves_{bm}x{bn}"], row[f"fill_{bm}x{bn}"] = np.log2(waves), waves / np.ceil(waves)
        channels_last = len(x) == 4 and len(strides[0]) == 4 and strides[0][1] == 1 and c_in > 1
        kind = "depthwise" if groups > 1 and groups == c_in else ("grouped" if groups > 1 else "dense")
        gradients = "".join(str(int(bool(b))) for b in mask) if backward else ""
        row["regime"] = f"{dtypes[0]}|{w[2]}|{stride[0]}|{int(backward)}{gradients}|{int(channels_last)}|{kind}"
        out.append(row)
    return pd.DataFrame(out)


GROUPS = {
    "geom": ["kh", "kw", "sh", "ph", "log2_ho", "log2_wo", "log2_wi"],
    "bwdgemm": ["log2_dg_m", "log2_dg_n", "log2_dg_k", "log2_wg_m", "log2_wg_n", "log2_wg_k", "mask_in", "mask_w"],
    "waves": [f"{what}_{bm}x{bn}" for bm, bn in TILES for what in ("waves", "fill")],
    "regime": ["regime"],
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trials", nargs="*", default=["base", "base+geom", "base+bwdgemm", "base+waves", "base+regime",
                                                 "base+geom+bwdgemm+waves+regime", "grow=Depthwise", "grow=Lossguide"])
    p.add_argument("--fraction", type=float, default=0.25)
    p.add_argument("--iterations", type=int, default=1000)
    p.add_argument("--learning-rate", type=float, default=0.15)
    args = p.parse_args()
    for trial in args.trials:
        names = trial.split("+")
        if not (trial.startswith("grow=") or (names[0] == "base" and all(n in GROUPS for n in names[1:]))):
            p.error(f"unknown trial {trial!r}: base[+{'|'.join(GROUPS)}...] or grow=Depthwise|Lossguide")
    from fit_choices import read_family

    from maya.estimator.features import CATEGORICAL_FEATURES, extract_features, features_for_family, target_base_us
    from maya.estimator.fit import error_metrics, holdout_mask, import_catboost
    from maya.estimator.fit_report import from_target, to_target
    from maya.estimator.signature import signature_keys
    from maya.hardware import load_gpu

    catboost = import_catboost()
    rows = read_family(sorted(PROFILES.glob("*.parquet")), "conv")
    measured = rows.column("duration_us").to_numpy().astype(np.float64)
    keys = signature_keys(rows)
    features = extract_features(rows, load_gpu("h200"))
    names = list(features_for_family("conv"))
    x = pd.concat([features[names].reset_index(drop=True), _extras(rows)], axis=1)
    base_us = target_base_us(features, "conv")
    y = to_target(measured, base_us)
    held = np.isin(keys, keys[holdout_mask(keys, 0.2, 0)])
    train = ~held & (holdout_mask(keys, args.fraction, 1) if args.fraction < 1 else True)
    print(f"conv: {len(keys)} rows, trained on {int(train.sum())} ({args.fraction:g} of the split's training "
          f"signatures), scored on {int(held.sum())}; {args.iterations} iterations at learning rate {args.learning_rate}")
    print("| trial | median abs error | time-weighted error | fit s |\n|---|---:|---:|---:|")
    for trial in args.trials:
        columns = list(names)
        categorical = [n for n in names if n in CATEGORICAL_FEATURES]
        extra = {}
        if trial.startswith("grow="):
            extra = {"grow_policy": trial.split("=", 1)[1]}
            if extra["grow_policy"] == "Lossguide":
                extra["max_leaves"] = 256
        else:
            for group in trial.split("+")[1:]:
                columns += GROUPS[group]
                categorical += [c for c in GROUPS[group] if c == "regime"]
        model = catboost.CatBoostRegressor(
            loss_function="MAE", iterations=args.iterations, learning_rate=args.learning_rate, depth=10, random_seed=0,
            thread_count=2, cat_features=categorical, verbose=False, allow_writing_files=False, **extra)
        start = time.monotonic()
        model.fit(x.loc[train, columns], y[train])
        seconds = time.monotonic() - start
        m = error_metrics(from_target(model.predict(x.loc[held, columns]), base_us[held]), measured[held])
        print(f"| {trial} | {m['median_ape']:.1%} | {m['time_weighted_error']:.1%} | {seconds:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
