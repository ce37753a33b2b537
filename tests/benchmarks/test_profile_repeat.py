"""benchmarks/profile_repeat.py: a second timing of the same signatures against the first."""

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
HELDOUT_RNN = ROOT / "benchmarks" / "gpu" / "heldout_ops_h200" / "rnn.parquet"


def _run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / "profile_repeat.py"), *map(str, args)],
                          capture_output=True, text=True, cwd=ROOT)


def test_differences_per_group_over_the_signatures_both_files_timed(tmp_path):
    rows = pq.read_table(HELDOUT_RNN).slice(0, 4)
    first = rows.set_column(rows.schema.get_field_index("duration_us"), "duration_us", pa.array([100.0, 100.0, 200.0, 400.0]))
    # The second file times three of the four again (+10%, -30%, exact) and one signature the first lacks.
    again = first.slice(0, 3).set_column(first.schema.get_field_index("duration_us"), "duration_us",
                                         pa.array([110.0, 70.0, 200.0]))
    extra = pq.read_table(HELDOUT_RNN).slice(10, 1)
    pq.write_table(first, tmp_path / "first.parquet")
    pq.write_table(pa.concat_tables([again, extra.cast(again.schema)]), tmp_path / "second.parquet")
    out = _run(tmp_path / "first.parquet", tmp_path / "second.parquet")
    assert out.returncode == 0, out.stderr
    # Three signatures matched: |diff| 10, 30, 0 over 400 us; median |diff / first| of 10%, 30%, 0%.
    assert "| rnn | 3 | 10.0% | 10.0% |" in out.stdout
    assert "| **all** | 3 | 10.0% | 10.0% |" in out.stdout
    by_op = _run(tmp_path / "first.parquet", tmp_path / "second.parquet", "--by", "op,allow_tf32")
    ops = pc.unique(first.slice(0, 3).column("op")).to_pylist()
    assert all(f"| {op} | " in by_op.stdout for op in ops) and "| **all** | | 3 |" in by_op.stdout


def test_a_missing_file_or_column_is_named(tmp_path):
    out = _run(tmp_path / "nope.parquet", HELDOUT_RNN)
    assert out.returncode != 0 and "nope.parquet: no such profile file" in out.stderr
    out = _run(HELDOUT_RNN, HELDOUT_RNN, "--by", "kernel_name")
    assert out.returncode != 0 and "has no column kernel_name" in out.stderr
