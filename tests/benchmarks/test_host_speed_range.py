"""benchmarks/host_speed_range.py: the shipped host speed range comes from the committed lease step times
of the calibration workloads whose step the host sets."""

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("benchmarks_host_speed_range", ROOT / "benchmarks" / "host_speed_range.py")
speed = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = speed
_spec.loader.exec_module(speed)


def test_only_calibration_workloads_the_host_sets_are_pooled_each_over_its_own_median():
    times = {
        "mlp_tiny_adamw": [20.0, 10.0, 40.0],      # host-set (3.40 ms of GPU time per step): 1.0, 0.5, 2.0
        "gpt2_124m_bf16": [43.0, 44.0, 45.0],      # the GPU sets it (42.5 ms of GPU time per step)
        "mlp_tiny_deep_sgd_bf16": [50.0, 80.0],    # held out: never read
        "moe_top2_bf16": [150.0],                  # one lease: no spread to read
    }
    assert speed.host_set_ratios(times) == {"mlp_tiny_adamw": [1.0, 0.5, 2.0]}


def test_the_shipped_range_is_what_the_committed_leases_give():
    shipped = json.loads(speed.HOST_FILE.read_text())["host_speed_range"]
    ratios = speed.host_set_ratios(speed.lease_times())
    assert set(ratios) == {"mlp_tiny_adamw", "moe_top2_bf16"}
    pooled = [x for r in ratios.values() for x in r]
    assert shipped == pytest.approx([np.percentile(pooled, q) for q in speed.PERCENTILES], abs=5e-4)
    assert shipped[0] < 1.0 < shipped[1]
