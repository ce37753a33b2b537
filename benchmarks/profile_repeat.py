"""How far a second timing of the same op signatures lies from the first: two profile files compared.

    python benchmarks/profile_repeat.py FIRST.parquet SECOND.parquet [--by op,allow_tf32]

Both are `maya profile` outputs (or shipped files of maya/estimator/data/h200). For every signature
both timed (matched as the estimator matches them, with each row's TF32 setting), prints per group of
FIRST's `--by` columns (default: family) and over all the median |second/first - 1| and the
time-weighted difference sum|second - first| / sum(first): the noise floor of timings taken on
different leases or days, which no model fitted to one of them can beat on the other.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from estimator_accuracy import difference_table  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("first", type=Path)
    p.add_argument("second", type=Path)
    p.add_argument("--by", default="family", help="comma-separated columns of FIRST to group by")
    args = p.parse_args(argv)
    tables = []
    for path in (args.first, args.second):
        if not path.is_file():
            sys.exit(f"{path}: no such profile file")
        tables.append(pq.read_table(path))
    by = tuple(c for c in args.by.split(",") if c)
    missing = [c for c in by if c not in tables[0].column_names]
    if missing:
        sys.exit(f"{args.first} has no column {', '.join(missing)} (columns: {', '.join(tables[0].column_names)})")
    print(difference_table(*tables, by=by))


if __name__ == "__main__":
    main()
