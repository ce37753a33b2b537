"""The op signatures of whole CNN training steps as a held-out set for `benchmarks/estimator_accuracy.py`.

    python benchmarks/gpu/heldout_cnn_layers.py OUT_DIR PROFILE_DIR...

Each PROFILE_DIR is the output of `maya profile --trace TRACE --out PROFILE_DIR` on a GPU (its
`exact.parquet`: every unique kernel signature of one emulated training step, timed as `maya profile`
times the grids). Writes `OUT_DIR/<PROFILE_DIR's name>.parquet`: those rows with each op's family
(`maya.estimator.families.family_of`) in place of "exact" and a `workload` column, so that
`python benchmarks/estimator_accuracy.py --heldout OUT_DIR --repeat /nonexistent --autotuned /nonexistent`
scores the shipped models on layer shapes of real networks rather than on random draws. Rows of ops
that belong to no family are dropped (and counted).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq


def convert(profile_dir: Path, out_dir: Path) -> tuple[int, int]:
    """Write `out_dir/<profile_dir.name>.parquet`; returns (rows written, rows dropped)."""
    from maya.estimator.families import family_of

    source = profile_dir / "exact.parquet"
    if not source.exists():
        raise SystemExit(f"{profile_dir}: no exact.parquet (the output of `maya profile --trace TRACE --out DIR`)")
    table = pq.read_table(source)
    families = [family_of(op) for op in table.column("op").to_pylist()]
    table = table.set_column(table.schema.get_field_index("family"), "family", pa.array(families, pa.string()))
    table = table.append_column("workload", pa.array([profile_dir.name] * table.num_rows, pa.string()))
    kept = table.filter(pc.is_valid(table.column("family")))
    out_dir.mkdir(parents=True, exist_ok=True)
    pq.write_table(kept, out_dir / f"{profile_dir.name}.parquet")
    return kept.num_rows, table.num_rows - kept.num_rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out_dir", type=Path)
    p.add_argument("profile_dirs", type=Path, nargs="+")
    args = p.parse_args()
    for d in args.profile_dirs:
        written, dropped = convert(d, args.out_dir)
        print(f"{d.name}: {written} rows, {dropped} without a family dropped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
