"""Held-out CNN workloads stay held out: no shipped normalisation row is an op of their steps.

The CNN-layout norm grids (batch, group and channel layer norms) were written to cover real CNN
layers; twice a grid took the held-out ConvNeXt's and U-Net's own shapes (their batch of 64), and
their rows were dropped again in session 24. This reads every shipped norm profile and the held-out
workloads' recorded op signatures (benchmarks/gpu/heldout_cnn_layers_sleep_h200), and checks the
grid too, so that neither the shipped rows nor a future `maya profile --cnn-layouts` run brings them back.
"""

import importlib.util
from pathlib import Path

import pyarrow.parquet as pq

from maya.estimator.profile_grid import _cnn_layout_norms

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "maya" / "estimator" / "data" / "h200"
HELDOUT = ROOT / "benchmarks" / "gpu" / "heldout_cnn_layers_sleep_h200"
_spec = importlib.util.spec_from_file_location("estimator_accuracy", ROOT / "benchmarks" / "estimator_accuracy.py")
estimator_accuracy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(estimator_accuracy)


def _heldout_norms() -> tuple[set[int], set[tuple[int, ...]]]:
    """The held-out CNN steps' norm-op signature keys, and their norms' input shapes."""
    keys, shapes = set(), set()
    for path in sorted(HELDOUT.glob("*.parquet")):
        table = pq.read_table(path)
        keys |= set(estimator_accuracy.profile_keys(table).tolist())
        shapes |= {tuple(s[0]) for op, s in zip(table.column("op").to_pylist(), table.column("input_shapes").to_pylist())
                   if "norm" in op and s}
    return keys, shapes


def test_no_shipped_norm_row_is_a_held_out_cnn_step_op():
    keys, _ = _heldout_norms()
    files = sorted(DATA.glob("norm*.parquet"))
    assert len(files) >= 4
    for path in files:
        shipped = set(estimator_accuracy.profile_keys(pq.read_table(path)).tolist())
        assert not shipped & keys, path.name


def test_the_cnn_layout_norm_grid_has_no_held_out_cnn_shape():
    _, shapes = _heldout_norms()
    assert shapes  # batch, group and layer norms of four CNNs
    grid = {tuple(case.input_shapes[0]) for case in _cnn_layout_norms()}
    assert not grid & shapes
