import logging

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from maya.estimator.estimate import estimate_dataset, estimate_trace, one_unmodelled_warning, source_shares
from maya.estimator.roofline import KERNEL_LATENCY_US
from maya.trace import read_rank_trace, write_meta, write_rank_trace


def _time_weighted_error(predicted, measured):
    return float(np.abs(predicted - measured).sum() / measured.sum())


def test_trace_rows_get_durations_sources_and_zero_for_non_kernels(fitted, profiles, make_trace, tmp_path):
    models_dir, _ = fitted
    write_rank_trace(tmp_path, 0, make_trace(profiles))
    write_meta(tmp_path, {"world_size": 1})
    df = estimate_trace(read_rank_trace(tmp_path, 0), models_dir=models_dir)
    kernels = df[df["kind"] == "kernel"]
    assert (kernels["duration_us"] > 0).all()
    assert set(kernels["estimate_source"]) == {"exact"}
    others = df[df["kind"].isin(["sync", "event_record", "collective"])]
    assert (others["duration_us"] == 0).all() and set(others["estimate_source"]) == {"none"}
    memcpy = df[df["kind"] == "memcpy"].iloc[0]
    # 64 MiB host-to-device over PCIe Gen5 (64 GB/s per direction), plus kernel latency.
    assert memcpy["duration_us"] == pytest.approx((64 << 20) / 64e9 * 1e6 + KERNEL_LATENCY_US)
    shares = source_shares(df)
    assert sum(shares.values()) == pytest.approx(1.0)
    assert set(shares) == {"exact", "roofline", "none"}


def test_exact_lookup_beats_catboost_when_the_signature_was_profiled(fitted, profile_dir):
    models_dir, _ = fitted
    # exact.parquet holds signatures timed on their own: their measured medians are the truth here.
    exact_rows = pq.read_table(profile_dir / "exact.parquet")
    measured = exact_rows.column("duration_us").to_numpy()
    with_exact = estimate_trace(exact_rows, models_dir=models_dir)
    learned = estimate_trace(exact_rows, models_dir=models_dir, exact=False)
    assert set(with_exact["estimate_source"]) == {"exact"}
    assert set(learned["estimate_source"]) == {"catboost"}
    exact_error = _time_weighted_error(with_exact["duration_us"].to_numpy(), measured)
    catboost_error = _time_weighted_error(learned["duration_us"].to_numpy(), measured)
    assert exact_error < catboost_error
    assert exact_error < 1e-9


def test_unseen_family_falls_back_to_roofline_with_one_counting_warning(fitted, profiles, caplog):
    models_dir, _ = fitted
    rows = profiles.slice(0, 20)
    # Factories and random generators are left to roofline on purpose: timed so, without the warning.
    ops = (["aten::my_custom_op"] * 5 + ["aten::_foreach_mul_.Scalar"] * 3
           + ["aten::zeros", "aten::randint.low", "aten::new_ones"] + rows.column("op").to_pylist()[11:])
    rows = rows.set_column(rows.column_names.index("op"), "op", pa.array(ops))
    with caplog.at_level(logging.WARNING, logger="maya.estimator.estimate"):
        df = estimate_trace(rows, models_dir=models_dir, exact=False)
    fallback = df["estimate_source"] == "roofline"
    assert fallback.sum() == 11
    assert (df.loc[fallback, "duration_us"] >= KERNEL_LATENCY_US).all()
    assert df.loc[fallback, "low_confidence"].all()
    messages = [r.getMessage() for r in caplog.records if "had no model" in r.getMessage()]
    assert messages == [
        "8 ops of 2 op types had no model; roofline used: aten::my_custom_op (5), aten::_foreach_mul_.Scalar (3)"
    ]
    # The ranks of one job (`predict.estimate_and_simulate`): one warning for all of them, after the last.
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="maya.estimator.estimate"), one_unmodelled_warning():
        estimate_trace(rows, models_dir=models_dir, exact=False)
        estimate_trace(rows.slice(0, 5), models_dir=models_dir, exact=False)
        assert "had no model" not in caplog.text
    messages = [r.getMessage() for r in caplog.records if "had no model" in r.getMessage()]
    assert messages == ["13 ops of 2 op types had no model over 2 representative ranks; roofline used: "
                        "aten::my_custom_op (10), aten::_foreach_mul_.Scalar (3)"]


def test_transfer_to_h100_scales_by_catalog_ratio_and_marks_low_confidence(fitted, profiles):
    models_dir, _ = fitted
    h200 = estimate_trace(profiles, models_dir=models_dir, gpu="h200")
    h100 = estimate_trace(profiles, models_dir=models_dir, gpu="h100")
    assert set(h100["estimate_source"]) == {"exact-transfer"}
    assert h100["low_confidence"].all() and not h200["low_confidence"].any()
    # All CPU-dataset ops are float32/float64 without TF32: both GPUs have 67 TFLOP/s there, so
    # compute-bound ops (intensity >= 67e12 / 4.8e12 FLOP/byte) keep their time, and a memory-bound
    # op slows down by 4800 / 3350 GB/s on the share of its H200 time that streaming its bytes at
    # 0.8 x 4800 GB/s explains.
    flops, bytes_ = h200["flops"].to_numpy(), h200["bytes"].to_numpy()
    memory_bound = flops < 67e12 / 4800e9 * bytes_
    share = np.minimum(1.0, bytes_ / (0.8 * 4800e9) * 1e6 / h200["duration_us"].to_numpy())
    expected_ratio = np.where(memory_bound, 1 + share * (4800 / 3350 - 1), 1.0)
    assert memory_bound.any()
    np.testing.assert_allclose(h100["duration_us"] / h200["duration_us"], expected_ratio, rtol=1e-12)
    learned = estimate_trace(profiles, models_dir=models_dir, gpu="a100", exact=False)
    assert set(learned["estimate_source"]) == {"catboost-transfer"}


def test_estimate_dataset_matches_estimate_trace(fitted, profiles, make_trace, ray_local):
    models_dir, _ = fitted
    trace = make_trace(profiles)
    expected = estimate_trace(trace, models_dir=models_dir, exact=False)
    ds = estimate_dataset(ray_local.data.from_arrow(trace), models_dir=models_dir, exact=False)
    got = ds.to_pandas().sort_values("seq").reset_index(drop=True)
    np.testing.assert_allclose(got["duration_us"].to_numpy(), expected["duration_us"].to_numpy(), rtol=1e-12)
    assert got["estimate_source"].tolist() == expected["estimate_source"].tolist()


def test_missing_models_dir_names_the_path_and_the_fit_command(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"maya fit") as error:
        estimate_trace(pa.table({"op": ["aten::mm"]}), models_dir=tmp_path / "nothing")
    assert str(tmp_path / "nothing") in str(error.value)


def test_a_model_uses_its_own_feature_names_and_an_unknown_one_is_named():
    # A model fitted before a feature existed predicts from the columns it knows; a model that wants a
    # feature this Maya does not compute fails naming it and the refit command.
    import catboost
    import pandas as pd

    from maya.estimator.estimate import _model_features

    def fitted(columns):
        x = pd.DataFrame({c: np.arange(8.0) for c in columns})
        return catboost.CatBoostRegressor(iterations=2, verbose=False, allow_writing_files=False).fit(x, np.arange(8.0))

    assert _model_features(fitted(["log2_flops", "log2_gemm_m"]), "conv") == ["log2_flops", "log2_gemm_m"]
    with pytest.raises(ValueError, match=r"the conv model wants features \['nope'\].*maya fit"):
        _model_features(fitted(["log2_flops", "nope"]), "conv")


def test_transfer_scales_only_the_share_of_time_the_bounding_resource_explains():
    from maya.estimator.estimate import transfer_ratio
    from maya.hardware import load_gpu

    h200, h100, a100 = load_gpu("h200"), load_gpu("h100"), load_gpu("a100")
    bf16 = np.full(4, 989.4e12)
    # a 1 GB copy taking exactly its roofline time on the H200 (1e9 / (0.8 * 4.8e12) s = 260.4 us),
    # the same copy at half that rate, a 4 KB copy of 5 us (launch-bound), and an 8192^3 bf16 GEMM
    # (intensity 2731 FLOP/byte, above the ridge) at 70% of peak
    roofline_copy_us = 1e9 / (0.8 * 4.8e12) * 1e6
    source_us = np.array([roofline_copy_us, 2 * roofline_copy_us, 5.0, 2 * 8192**3 / (0.7 * 989.4e12) * 1e6])
    flops = np.array([0.0, 0.0, 0.0, 2 * 8192**3])
    bytes_ = np.array([1e9, 1e9, 4096.0, 3 * 8192**2 * 2])
    ratio = transfer_ratio(source_us, flops, bytes_, bf16, bf16, h200, h100)
    bandwidth = 4800 / 3350
    small_share = 4096 / (0.8 * 4.8e12) * 1e6 / 5
    np.testing.assert_allclose(ratio, [bandwidth, 1 + 0.5 * (bandwidth - 1), 1 + small_share * (bandwidth - 1), 1.0])
    assert ratio[2] < 1.0001  # the launch-bound copy keeps its time
    # the A100's bf16 peak is 312 TFLOP/s: the GEMM, all compute, takes the whole peak ratio
    a100_ratio = transfer_ratio(source_us[3:], flops[3:], bytes_[3:], bf16[3:], np.array([312e12]), h200, a100)
    assert a100_ratio[0] == pytest.approx(989.4 / 312)
