"""benchmarks/gpu/heldout_cnn_layers.py: `maya profile --trace` output -> a held-out set with families."""

import importlib.util
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]
CNN = ROOT / "benchmarks" / "gpu" / "heldout_cnn_layers_h200"
_spec = importlib.util.spec_from_file_location("heldout_cnn_layers", ROOT / "benchmarks" / "gpu" / "heldout_cnn_layers.py")
cnn = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cnn)


def test_trace_profile_rows_get_their_family_and_workload(tmp_path):
    rows = pq.read_table(CNN / "cifar_resnet18_bf16.parquet").drop_columns(["workload"]).slice(0, 6)
    exact = rows.set_column(rows.schema.get_field_index("family"), "family", pa.array(["exact"] * 6))
    no_family = exact.slice(0, 1).set_column(exact.schema.get_field_index("op"), "op", pa.array(["aten::randn"]))
    (tmp_path / "step").mkdir()
    pq.write_table(pa.concat_tables([exact, no_family]), tmp_path / "step" / "exact.parquet")
    assert cnn.convert(tmp_path / "step", tmp_path / "out") == (6, 1)
    out = pq.read_table(tmp_path / "out" / "step.parquet")
    assert out.column("family").to_pylist() == rows.column("family").to_pylist()
    assert set(out.column("workload").to_pylist()) == {"step"}


def test_a_directory_without_a_trace_profile_is_named(tmp_path):
    with pytest.raises(SystemExit, match="no exact.parquet"):
        cnn.convert(tmp_path, tmp_path / "out")
