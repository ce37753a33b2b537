"""Concatenate per-seed profile files into one shipped profile file.

    python benchmarks/gpu/combine_draws.py OUT.parquet FILE.parquet... [--drop COLUMN...]

e.g. `python benchmarks/gpu/combine_draws.py maya/estimator/data/h200/sdpa_draws.parquet
benchmarks/gpu/random_draws_h200_2/sdpa_seed*/sdpa.parquet`: the files of `run_random_draws.sh`'s jobs
(one directory per seed) in the order given, rows unchanged, so `maya fit` reads them with the grids.
`--drop` leaves columns out that the profile schema does not have (e.g. `kernels`, the launched kernels
that benchmarks/gpu/conv_kernel_probe.py records). Runs without a GPU (pyarrow only).
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
    p.add_argument("--drop", nargs="*", default=[], metavar="COLUMN", help="columns to leave out of every file")
    args = p.parse_args()
    missing = [str(f) for f in args.files if not f.is_file()]
    if missing:
        sys.exit(f"not a file: {', '.join(missing)}")
    tables = [pq.read_table(f) for f in args.files]
    tables = [t.drop_columns([c for c in args.drop if c in t.column_names]) for t in tables]
    table = pa.concat_tables(tables, promote_options="permissive")
    pq.write_table(table, args.out, compression="zstd", compression_level=19)
    print(f"wrote {table.num_rows} rows from {len(args.files)} files to {args.out}")


if __name__ == "__main__":
    main()
