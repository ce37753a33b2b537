import gzip
import json
import shutil

import numpy as np
import pytest

from maya.estimator.fit import fit_models, import_catboost, load_model
from maya.estimator.fit_report import FitReport
from maya.estimator.model_set import load_model_set


def test_held_out_metrics_are_computed_and_bounded(fitted):
    models_dir, report = fitted
    assert set(report.families) == {"gemm", "elementwise", "softmax"}
    for fit in report.families.values():
        assert fit.holdout_rows > 0 and fit.holdout_signatures > 0
        assert fit.mape is not None and fit.median_ape is not None
        # Real CPU timings: CatBoost reaches ~0.2-0.4 time-weighted error; the roofline, built for a
        # GPU, is far off (~0.9). The bound is loose so that a noisy CPU never fails the suite.
        assert 0 <= fit.time_weighted_error < 0.7, fit
        assert fit.median_ape < 0.5, fit
        assert fit.time_weighted_error < fit.roofline_time_weighted_error, fit
        assert (models_dir / f"{fit.family}.cbm.gz").exists()
        assert not (models_dir / f"{fit.family}.cbm").exists()
    assert "aten::mm" in report.families["gemm"].ops


def test_report_round_trips_and_records_provenance(fitted):
    models_dir, report = fitted
    raw = json.loads((models_dir / "fit_report.json").read_text())
    assert raw["gpu"] == "h200" and raw["seed"] == 0 and raw["catboost_version"]
    assert raw["families"]["gemm"]["features"][0] == "op"
    assert FitReport.load(models_dir) == report
    # Each family's settings (maya/estimator/fit.py: GEMM deeper, with MAE; the others depth 6, RMSE).
    gemm, softmax = raw["families"]["gemm"], raw["families"]["softmax"]
    assert (gemm["depth"], gemm["loss_function"]) == (8, "MAE") and gemm["iterations"] == 2 * softmax["iterations"]
    assert (softmax["depth"], softmax["loss_function"]) == (6, "RMSE")


def test_each_family_gets_its_tree_depth_and_iterations():
    # Deep families at depth 8 with twice the iterations, RNNs and convolutions deeper still
    # (fit.DEPTH_BY_FAMILY), convolutions with three times more iterations again
    # (fit.ITERATIONS_FACTOR_BY_FAMILY), the rest at depth 6.
    import catboost

    from maya.estimator import fit

    def params(family):
        p = fit._regressor(catboost, family, iterations=10, seed=0, thread_count=1, categorical=[]).get_params()
        return p["depth"], p["iterations"]

    assert [params(f) for f in ("rnn", "conv", "gemm", "softmax")] == [(10, 20), (10, 60), (8, 20), (6, 10)]


def test_a_report_without_model_settings_still_loads(fitted, tmp_path):
    models_dir, report = fitted
    raw = json.loads((models_dir / "fit_report.json").read_text())
    for fit in raw["families"].values():
        for key in ("depth", "loss_function", "iterations"):
            del fit[key]
    (tmp_path / "fit_report.json").write_text(json.dumps(raw))
    assert FitReport.load(tmp_path).families["gemm"].depth is None


def test_fit_is_deterministic(profile_dir, tmp_path, profiles):
    a = fit_models(profile_dir, tmp_path / "a", seed=3, gpu="h200", iterations=40)
    b = fit_models(profile_dir, tmp_path / "b", seed=3, gpu="h200", iterations=40)
    assert a.families == b.families
    rows = profiles.slice(0, 50)
    from maya.estimator.estimate import estimate_trace

    first = estimate_trace(rows, models_dir=tmp_path / "a", exact=False)["duration_us"].to_numpy()
    second = estimate_trace(rows, models_dir=tmp_path / "b", exact=False)["duration_us"].to_numpy()
    np.testing.assert_array_equal(first, second)
    load_model_set.cache_clear()


def test_profiles_from_a_cpu_need_an_explicit_gpu(profile_dir, tmp_path):
    with pytest.raises(ValueError, match="not a catalog GPU"):
        fit_models(profile_dir, tmp_path, iterations=5)


def test_an_uncompressed_model_file_loads_and_a_missing_one_is_named(fitted, tmp_path):
    models_dir, report = fitted
    copy = tmp_path / "models"
    shutil.copytree(models_dir, copy)
    compressed = copy / "gemm.cbm.gz"
    (copy / "gemm.cbm").write_bytes(gzip.decompress(compressed.read_bytes()))
    compressed.unlink()
    catboost = import_catboost()
    gemm = report.families["gemm"]
    x = [["aten::mm" if name == "op" else "x" if name in gemm.categorical_features else 0.0 for name in gemm.features]]
    assert load_model(catboost, copy, "gemm").predict(x) == load_model(catboost, models_dir, "gemm").predict(x)
    (copy / "gemm.cbm").unlink()
    with pytest.raises(FileNotFoundError, match=r"gemm.*gemm\.cbm\.gz.*gemm\.cbm"):
        load_model(catboost, copy, "gemm")


def test_models_fitted_without_an_exact_table_estimate_every_op_from_the_models(profile_dir, tmp_path, profiles):
    from maya.estimator.estimate import estimate_trace
    from maya.estimator.exact_table import EXACT_FILE

    fit_models(profile_dir, tmp_path, seed=3, gpu="h200", iterations=40)
    assert (tmp_path / EXACT_FILE).exists()
    rows = profiles.slice(0, 50)
    assert "exact" in set(estimate_trace(rows, models_dir=tmp_path)["estimate_source"])
    load_model_set.cache_clear()
    fit_models(profile_dir, tmp_path, seed=3, gpu="h200", iterations=40, exact_table=False)  # as the shipped H200 models
    assert not (tmp_path / EXACT_FILE).exists()  # the earlier table is gone, not left stale
    assert "exact" not in set(estimate_trace(rows, models_dir=tmp_path)["estimate_source"])
    load_model_set.cache_clear()


def test_refitting_some_families_gives_a_full_fits_models_and_keeps_the_others(profile_dir, tmp_path, profiles):
    from maya.estimator.estimate import estimate_trace

    full = fit_models(profile_dir, tmp_path / "full", seed=0, gpu="h200", iterations=40, exact_table=False)
    shutil.copytree(tmp_path / "full", tmp_path / "part")
    kept = {name: (tmp_path / "part" / f"{name}.cbm.gz").read_bytes() for name in ("gemm", "elementwise")}
    (tmp_path / "part" / "softmax.cbm.gz").unlink()
    part = fit_models(profile_dir, tmp_path / "part", seed=0, gpu="h200", iterations=40, exact_table=False,
                      families=["softmax"])
    assert part == full and FitReport.load(tmp_path / "part") == full
    assert all((tmp_path / "part" / f"{name}.cbm.gz").read_bytes() == data for name, data in kept.items())
    rows = profiles.filter(np.array([f == "softmax" for f in profiles.column("family").to_pylist()]))
    load_model_set.cache_clear()
    np.testing.assert_array_equal(
        estimate_trace(rows, models_dir=tmp_path / "part", exact=False)["duration_us"].to_numpy(),
        estimate_trace(rows, models_dir=tmp_path / "full", exact=False)["duration_us"].to_numpy())
    load_model_set.cache_clear()


def test_refitting_some_families_refuses_what_it_cannot_merge(profile_dir, tmp_path):
    with pytest.raises(ValueError, match="no fit_report.json"):
        fit_models(profile_dir, tmp_path / "empty", gpu="h200", iterations=40, exact_table=False, families=["gemm"])
    fit_models(profile_dir, tmp_path / "m", gpu="h200", iterations=40, exact_table=False)
    with pytest.raises(ValueError, match="no profile rows of family conv"):
        fit_models(profile_dir, tmp_path / "m", gpu="h200", iterations=40, exact_table=False, families=["conv"])
    with pytest.raises(ValueError, match="needs --no-exact-table"):
        fit_models(profile_dir, tmp_path / "m", gpu="h200", iterations=40, families=["gemm"])
    before = (tmp_path / "m" / "gemm.cbm.gz").read_bytes()
    with pytest.raises(ValueError, match="iterations 40 there, 50 now"):
        fit_models(profile_dir, tmp_path / "m", gpu="h200", iterations=50, exact_table=False, families=["gemm"])
    assert (tmp_path / "m" / "gemm.cbm.gz").read_bytes() == before  # refused before anything was written
