"""The shipped calibration (per-family factors, the profiles' event overhead) applies to exact and
CatBoost estimates, and only to the shipped models."""

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from maya.estimator.calibration import CALIBRATION_FILE, NO_CALIBRATION, load_calibration
from maya.estimator.estimate import estimate_trace
from maya.estimator.model_set import packaged_models_dir


def test_shipped_factors_scale_estimates_of_their_family():
    models = packaged_models_dir("h200")
    shipped = json.loads((models / CALIBRATION_FILE).read_text())
    factor, overhead, floor = shipped["family_scale"]["elementwise"], shipped["event_overhead_us"], shipped["kernel_floor_us"]
    assert overhead > 0 and floor > 0
    rows = pq.read_table(models.parent / "elementwise.parquet")
    raw = estimate_trace(rows, gpu="h200", calibrated=False)["duration_us"].to_numpy()
    calibrated = estimate_trace(rows, gpu="h200")["duration_us"].to_numpy()
    assert calibrated == pytest.approx(np.maximum(raw * factor - overhead, floor))
    assert (raw * factor - overhead < floor).any() and (calibrated > floor).any()  # both branches taken


def test_models_without_a_calibration_file_are_unscaled(tmp_path):
    assert load_calibration(tmp_path) is NO_CALIBRATION
    duration = np.array([5.0, 500.0])
    NO_CALIBRATION.apply(duration, np.array(["gemm", "gemm"], dtype=object), np.array([True, True]))
    assert duration.tolist() == [5.0, 500.0]


def test_shipped_models_estimate_grad_scaler_ops_from_their_profile(caplog):
    # GradScaler's unscale (one foreach kernel over the gradients) and update ops were timed on the
    # H200 (foreach_grad_scaler.parquet); the foreach model estimates them, with no roofline warning.
    models = packaged_models_dir("h200")
    rows = pq.read_table(models.parent / "foreach_grad_scaler.parquet")
    assert set(rows.column("op").to_pylist()) == {"aten::_amp_foreach_non_finite_check_and_unscale_",
                                                  "aten::_amp_update_scale_"}  # fmt: skip
    with caplog.at_level("WARNING"):  # as a trace's rows: no family column, the op names it
        estimated = estimate_trace(rows.drop_columns(["family"]), gpu="h200", calibrated=False)
    assert set(estimated["estimate_source"]) == {"catboost"}
    assert "roofline" not in caplog.text
    measured = rows.column("duration_us").to_numpy()
    ratio = estimated["duration_us"].to_numpy() / measured
    assert np.median(np.abs(ratio - 1)) < 0.15  # its own training rows: a fit, not a fallback
