"""Concatenate per-seed profile files into one shipped profile file.

    python benchmarks/gpu/combine_draws.py OUT.parquet FILE.parquet...

e.g. `python benchmarks/gpu/combine_draws.py maya/estimator/data/h200/sdpa_draws.parquet
benchmarks/gpu/random_draws_h200_2/sdpa_seed*/sdpa.parquet`: the files of `run_random_draws.sh`'s jobs
(one directory per seed) in the order given, rows unchanged, so `maya fit` reads them with the grids.
Runs without a GPU (pyarrow only).
"""

import argparse
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("files", nargs="+", type=Path)
    args = p.parse_args()
    missing = [str(f) for f in args.files if not f.is_file()]
    if missing:
        sys.exit(f"not a file: {', '.join(missing)}")
    table = pa.concat_tables([pq.read_table(f) for f in args.files], promote_options="permissive")
    pq.write_table(table, args.out, compression="zstd")
    print(f"wrote {table.num_rows} rows from {len(args.files)} files to {args.out}")


if __name__ == "__main__":
    main()
