"""benchmarks/conv_timing_gaps.py on the committed session-19 convolution timings (no fitting)."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
S19 = ROOT / "benchmarks" / "gpu" / "session19_h200"
_spec = importlib.util.spec_from_file_location("conv_timing_gaps", ROOT / "benchmarks" / "conv_timing_gaps.py")
gaps = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gaps)


def test_sleep_timing_repeats_across_leases_and_idle_timing_does_not():
    sleep = gaps.repeat(S19 / "s19a" / "heldout_sleep" / "conv.parquet", S19 / "s19b" / "heldout_sleep" / "conv.parquet")
    idle = gaps.repeat(gaps.GPU / "heldout_ops_h200" / "conv.parquet", S19 / "s19a" / "heldout_idle" / "conv.parquet")
    assert sleep.signatures.sum() == idle.signatures.sum() == 888
    assert (sleep.apart_over_10pct <= 0.03).all()
    assert (idle.loc[["10-30 us", "30-100 us"], "apart_over_10pct"] > 0.5).all()


def test_idle_counterpart_has_as_many_rows_and_the_sleep_grids_signatures():
    from maya.estimator.signature import signature_keys

    sleep_train, held_idle, held_sleep = gaps._sleep_tables(S19 / "s19a")
    assert held_idle.num_rows == held_sleep.num_rows == 888
    idle = gaps._idle_counterpart(sleep_train)
    assert idle.num_rows == sleep_train.num_rows
    grid_keys = set(signature_keys(gaps.pq.read_table(S19 / "s19a" / "grid_sleep_0" / "conv.parquet")).tolist())
    assert grid_keys <= set(signature_keys(idle).tolist())


def test_a_directory_without_sleep_timed_rows_is_named(tmp_path):
    with pytest.raises(SystemExit, match=f"no grid_sleep_.* under {tmp_path}"):
        gaps._sleep_tables(tmp_path)
