"""How much torch.backends.cudnn.benchmark changes convolution times on the H200 (same shapes, both modes).

    python benchmarks/cudnn_benchmark_effect.py

Pairs each signature of `benchmarks/gpu/heldout_ops_h200/conv.parquet` (cuDNN's heuristic algorithm
choice, PyTorch's default) with the same signature timed autotuned
(`benchmarks/gpu/heldout_ops_h200_cudnn_benchmark/`, its command in `command.txt` there) and prints
the distribution of autotuned / heuristic time, per op and dtype, and over the summed time.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).parents[1]
HEURISTIC = ROOT / "benchmarks" / "gpu" / "heldout_ops_h200" / "conv.parquet"
AUTOTUNED = ROOT / "benchmarks" / "gpu" / "heldout_ops_h200_cudnn_benchmark" / "conv.parquet"


def _keyed(path: Path) -> pd.DataFrame:
    """The profile's rows with a signature key that ignores the cudnn_benchmark attrs key."""
    from estimator_accuracy import profile_keys

    from maya.emulator.attrs import CUDNN_BENCHMARK

    table = pq.read_table(path)
    stripped = [json.dumps({k: v for k, v in json.loads(text).items() if k != CUDNN_BENCHMARK})
                for text in table.column("attrs").to_pylist()]
    table = table.set_column(table.schema.get_field_index("attrs"), "attrs", pa.array(stripped))
    df = table.select(["op", "duration_us"]).to_pandas()
    df["key"] = profile_keys(table)
    df["dtype"] = [dtypes[0] for dtypes in table.column("input_dtypes").to_pylist()]
    return df


def paired() -> pd.DataFrame:
    """One row per signature timed in both modes: op, dtype, heuristic_us, autotuned_us."""
    both = _keyed(HEURISTIC).merge(_keyed(AUTOTUNED)[["key", "duration_us"]], on="key", suffixes=("_h", "_a"))
    return both.rename(columns={"duration_us_h": "heuristic_us", "duration_us_a": "autotuned_us"}).drop(columns="key")


def main() -> None:
    df = paired()
    df["ratio"] = df.autotuned_us / df.heuristic_us
    print(f"{len(df)} convolution signatures timed both ways (autotuned / heuristic time)")
    print(f"summed time: {df.autotuned_us.sum() / df.heuristic_us.sum():.3f}; median {df.ratio.median():.3f}; "
          f"p10 {df.ratio.quantile(0.1):.3f}; p90 {df.ratio.quantile(0.9):.3f}; "
          f"faster by > 10%: {(df.ratio < 0.9).mean():.0%}; slower by > 10%: {(df.ratio > 1.1).mean():.0%}")
    for column in ("op", "dtype"):
        for name, g in df.groupby(column):
            print(f"  {name}: {len(g)} signatures, summed time {g.autotuned_us.sum() / g.heuristic_us.sum():.3f}, "
                  f"median {g.ratio.median():.3f}")


if __name__ == "__main__":
    main()
