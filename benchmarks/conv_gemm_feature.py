"""Whether the GEMM model's time of a convolution's implicit GEMM(s) helps the convolution model.

    python benchmarks/conv_gemm_feature.py [PROFILES]

For every convolution row of the profiles (default: the shipped H200 dataset) the implicit GEMMs
cuDNN's implicit-GEMM kernels run are built as batched matmuls (forward: M = N*Ho*Wo, N = Cout/g,
K = Cin/g*kernel, batch g; backward: data M = N*Hi*Wi, N = Cin/g, K = Cout/g*kernel, weight
M = Cout/g, N = Cin/g*kernel, K = N*Ho*Wo, as its output mask asks) and timed by the shipped GEMM
model. On the fit's own split (`fit.holdout_mask`, seed 0, 20% of the signatures) the convolution
model is fitted with the shipped settings (a) as shipped, (b) with log2 of that GEMM time as one
more feature, (c) with it as a feature and as the base of the target instead of the roofline time.
An experiment, not used by `maya fit`.
"""
import json
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fit_choices

from maya.estimator.estimate import estimate_trace
from maya.estimator.features import (
    CATEGORICAL_FEATURES,
    extract_features,
    features_for_family,
)
from maya.estimator.fit import error_metrics, holdout_mask, import_catboost
from maya.estimator.fit_report import from_target, to_target
from maya.estimator.signature import signature_keys
from maya.hardware import load_gpu

ELT = {"float32": 4, "bfloat16": 2, "float16": 2}

def gemm_rows(f, dtypes, tf32):
    """Synthetic bmm rows per conv row and which conv row each belongs to."""
    e = lambda c: np.exp2(f[c].to_numpy())
    g, m, n, k = e("log2_groups"), e("log2_gemm_m"), e("log2_gemm_n"), e("log2_gemm_k")
    batch, sin = e("log2_batch"), e("log2_spatial_in")
    cin_g = e("log2_c_in") / g
    ks = f["kernel_numel"].to_numpy()
    bwd = f["is_backward"].to_numpy() > 0
    mask = f["output_mask"].to_numpy().astype(int)
    rows, owner = [], []
    for i in range(len(f)):
        dims = []
        if not bwd[i]:
            dims.append((m[i], n[i], k[i]))
        else:
            if mask[i] & 1: dims.append((batch[i] * sin[i], cin_g[i], n[i] * ks[i]))
            if mask[i] & 2: dims.append((n[i], k[i], m[i]))
        for (M, N, K) in dims:
            G, M, N, K = (max(int(round(v)), 1) for v in (g[i], M, N, K))
            dt = dtypes[i]
            rows.append({"op": "aten::bmm", "input_shapes": [[G, M, K], [G, K, N]], "input_dtypes": [dt, dt],
                         "input_strides": [[M * K, K, 1], [K * N, N, 1]], "output_shapes": [[G, M, N]],
                         "output_dtypes": [dt], "output_strides": [[M * N, N, 1]],
                         "attrs": json.dumps({"args": [{"$t": 0}, {"$t": 1}], "kwargs": {}}),
                         "flops": 2.0 * G * M * N * K, "bytes": ELT.get(dt, 2) * G * (M * K + K * N + M * N),
                         "allow_tf32": bool(tf32[i]), "family": "gemm", "duration_us": 1.0})
            owner.append(i)
    return rows, np.array(owner)

def gemm_pred(rows_table, features):
    dtypes = [d[0] if len(d) else "float32" for d in rows_table.column("input_dtypes").to_pylist()]
    tf32 = rows_table.column("allow_tf32").to_numpy(zero_copy_only=False)
    rows, owner = gemm_rows(features, dtypes, tf32)
    t = pa.Table.from_pylist(rows)
    pred = np.zeros(len(rows))
    tfs = np.array([r["allow_tf32"] for r in rows])
    for flag in (False, True):
        idx = np.flatnonzero(tfs == flag)
        if len(idx):
            est = estimate_trace(t.take(pa.array(idx)), gpu="h200", exact=False, calibrated=False, allow_tf32=flag)
            pred[idx] = est["duration_us"].to_numpy()
    total = np.zeros(len(features))
    np.add.at(total, owner, pred)
    return np.log2(np.maximum(total, 1e-3))

def main():
    profiles = Path(sys.argv[1]) if len(sys.argv) > 1 else fit_choices.PROFILES
    catboost = import_catboost()
    parts = [pq.read_table(p) for p in sorted(profiles.glob("*.parquet"))]
    parts = [t.filter(pc.equal(t.column("family"), "conv")) for t in parts]
    rows = pa.concat_tables([t for t in parts if t.num_rows], promote_options="permissive")
    measured = rows.column("duration_us").to_numpy().astype(np.float64)
    keys = signature_keys(rows)
    features = extract_features(rows, load_gpu("h200")).reset_index(drop=True)
    t0 = time.time()
    features["log2_gemm_pred_us"] = gemm_pred(rows, features)
    print("gemm feature in", round(time.time() - t0, 1), "s", flush=True)
    names = list(features_for_family("conv"))
    categorical = [n for n in names if n in CATEGORICAL_FEATURES]
    roofline_us = np.exp2(features["log2_roofline_us"].to_numpy())
    held = holdout_mask(keys, 0.2, 0)
    print(f"conv: {len(rows)} rows, scored on {held.sum()} held-out rows")
    for label, cols, target in (("shipped", names, "roofline"), ("+gemm feature", names + ["log2_gemm_pred_us"], "roofline"),
                                ("+gemm feature, target vs gemm", names + ["log2_gemm_pred_us"], "gemm")):
        base = roofline_us if target == "roofline" else np.exp2(features["log2_gemm_pred_us"].to_numpy())
        y = to_target(measured, base)
        model = fit_choices.settings(catboost, "conv", "shipped", categorical)
        t0 = time.time()
        model.fit(features[cols][~held], y[~held])
        pred = from_target(model.predict(features[cols][held]), base[held])
        m = error_metrics(pred, measured[held])
        print(f"| {label} | {m['median_ape']:.1%} | {m['time_weighted_error']:.1%} | {time.time()-t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
