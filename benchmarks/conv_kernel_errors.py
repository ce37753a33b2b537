"""The shipped convolution model's error on draws it was not trained on, by the kernel cuDNN ran.

    python benchmarks/conv_kernel_errors.py [DIR]

DIR (default benchmarks/gpu/conv_kernels_h200/run2) holds `benchmarks/gpu/conv_kernel_probe.py`'s
files: profile rows with a `kernels` column. Rows whose signature is in the shipped training data are
dropped; each remaining row is estimated by the shipped models (no exact table, no calibration) and
put in the class of the kernel that took most of its device time. Prints, per class: rows, share of
measured time, median |error|, signed median error and time-weighted error.

Since session 12 the default DIR's rows are in the shipped training data (`conv_draws_2.parquet`), so
the script says so and exits; its result for the models before them is
benchmarks/results/conv_kernel_errors_h200.md (made from a checkout of commit f787e8d).
"""

import collections
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import estimator_accuracy

CLASSES = (  # (class, substrings of a kernel name), first match wins
    ("native_depthwise", ("at::native::(anonymous namespace)::conv_depthwise",)),
    ("implicit_gemm_tensor_core", ("xmma", "cutlass")),
    ("legacy_sgemm", ("sgemm",)),
    ("grouped_direct", ("grouped_direct",)),
    ("c1_k1", ("conv2d_c1_k1",)),
    ("layout_transpose", ("ToNhwc", "ToNchw")),
    ("reduce", ("reduce_kernel",)),
    ("winograd", ("inograd",)),
    ("fft", ("fft",)),
    ("elementwise", ("elementwise", "vectorized")),
)


def kernel_class(kernels: str) -> str:
    """The class of the kernel that took most device time in a `kernels` JSON list."""
    time_by_class: collections.Counter = collections.Counter()
    for name, device_us in json.loads(kernels):
        label = next((c for c, parts in CLASSES if any(p in name for p in parts)), "other")
        time_by_class[label] += device_us
    return time_by_class.most_common(1)[0][0] if time_by_class else "none"


def main() -> None:
    from maya.estimator.estimate import estimate_trace

    directory = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "benchmarks" / "gpu" / "conv_kernels_h200" / "run2"
    table = pa.concat_tables([pq.read_table(p) for p in sorted(directory.glob("*.parquet"))])
    seen = set(estimator_accuracy.profile_keys(estimator_accuracy._read(estimator_accuracy.TRAINING)).tolist())
    table = table.filter(pa.array([k not in seen for k in estimator_accuracy.profile_keys(table).tolist()]))
    if table.num_rows == 0:
        sys.exit(f"every row of {directory} is in the shipped training data: nothing to score "
                 "(benchmarks/results/conv_kernel_errors_h200.md has the result before they were shipped)")
    tf32 = np.asarray(table.column("allow_tf32").to_numpy(zero_copy_only=False), dtype=bool)
    frames = []
    for flag in (False, True):
        rows = np.flatnonzero(tf32 == flag)
        if len(rows):
            part = table.take(pa.array(rows))
            est = estimate_trace(part, gpu="h200", exact=False, calibrated=False, allow_tf32=flag)
            frames.append(pd.DataFrame({"measured": part.column("duration_us").to_numpy(),
                                        "predicted": est["duration_us"].to_numpy(),
                                        "kernels": part.column("kernels").to_pylist()}))
    df = pd.concat(frames, ignore_index=True)
    df["error"] = (df.predicted - df.measured) / df.measured
    df["cls"] = df.kernels.map(kernel_class)
    total = df.measured.sum()

    def row(x: pd.DataFrame) -> pd.Series:
        abs_err = x.error.abs()
        return pd.Series({"rows": len(x), "time share": x.measured.sum() / total, "median |error|": abs_err.median(),
                          "signed median": x.error.median(), "time-weighted": (abs_err * x.measured).sum() / x.measured.sum()})

    out = df.groupby("cls").apply(row).sort_values("rows", ascending=False)
    out.loc["all"] = row(df)
    print(f"{len(df)} rows of {directory} not in the training data")
    print(out.to_string(formatters={c: "{:.1%}".format for c in out.columns if c != "rows"} | {"rows": "{:.0f}".format}))


if __name__ == "__main__":
    main()
