"""benchmarks/fit_choices.py --by-file: which convolution rows are the fixed grid's CNN layers."""

import importlib.util
import sys
from pathlib import Path

import pyarrow.parquet as pq

from maya.estimator.features import extract_features
from maya.estimator.profile_grid import CONV_LAYERS
from maya.hardware import load_gpu

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "maya" / "estimator" / "data" / "h200"
sys.path.insert(0, str(ROOT / "benchmarks"))
_spec = importlib.util.spec_from_file_location("fit_choices", ROOT / "benchmarks" / "fit_choices.py")
fit_choices = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fit_choices)


def _grid_rows(name: str) -> int:
    features = extract_features(pq.read_table(DATA / name), load_gpu("h200"))
    return int(fit_choices._conv_grid_layer(features).sum())


def test_the_grid_layers_are_found_in_the_grid_profile_and_not_among_random_draws():
    # Every CNN layer at bfloat16 and float32 x batch 16, 64, 256 and float16 x batch 64, both
    # layouts, forward and backward.
    assert _grid_rows("conv.parquet") == len(CONV_LAYERS) * (3 + 3 + 1) * 2 * 2
    assert _grid_rows("conv_draws_2.parquet") == 0
