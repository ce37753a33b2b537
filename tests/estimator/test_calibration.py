"""The shipped per-family calibration scales exact and CatBoost estimates, and only the shipped models."""

import json

import pyarrow.parquet as pq
import pytest

from maya.estimator.calibration import CALIBRATION_FILE, family_scales
from maya.estimator.estimate import estimate_trace
from maya.estimator.model_set import packaged_models_dir


def test_shipped_factors_scale_estimates_of_their_family():
    models = packaged_models_dir("h200")
    factor = json.loads((models / CALIBRATION_FILE).read_text())["family_scale"]["gemm"]
    rows = pq.read_table(models.parent / "gemm.parquet").slice(0, 5)
    raw = estimate_trace(rows, gpu="h200", calibrated=False)["duration_us"].to_numpy()
    calibrated = estimate_trace(rows, gpu="h200")["duration_us"].to_numpy()
    assert calibrated == pytest.approx(raw * factor)


def test_models_without_a_calibration_file_are_unscaled(tmp_path):
    assert family_scales(tmp_path) == {}
