"""The shipped FSDP2 and DTensor host figures, checked against the recorded H200 measurements they come from."""

import json
from pathlib import Path

import pandas as pd
import pytest

from maya.estimator.host_cost import host_costs_us, host_overhead

STUDY = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu" / "host_profile_h200x4"


def test_fsdp_unit_line_is_the_probe_on_2_and_4_gpus_less_its_extra_gpu_ops():
    c = host_overhead("h200")
    lines = []
    for gpus in (2, 4):
        probe = json.loads((STUDY / "lease2" / f"fsdp_unit_{gpus}.json").read_text())
        linear, block = probe["probes"]
        assert (linear["params_per_unit"], block["params_per_unit"]) == (2, 12)
        # Each point is the probe's extra host time per unit less its extra GPU ops at aten_op_us,
        # which Maya charges as kernel rows of their own.
        a = linear["extra_us_per_unit"] - linear["extra_gpu_ops_per_unit"] * c["aten_op_us"]
        b = block["extra_us_per_unit"] - block["extra_gpu_ops_per_unit"] * c["aten_op_us"]
        per_param = (b - a) / 10
        lines.append((a - 2 * per_param, per_param))
    assert c["fsdp_unit_us"] == pytest.approx((lines[0][0] + lines[1][0]) / 2, abs=0.01)
    assert c["fsdp_unit_per_param_us"] == pytest.approx((lines[0][1] + lines[1][1]) / 2, abs=0.01)


def test_gpt2_small_fsdp2_units_and_dtensor_rows_cost_by_hand():
    rows = pd.DataFrame(
        {
            "kind": ["host"] * 4,
            "phase": ["forward", "forward", "other", "backward"],
            "op": ["fsdp:unit", "fsdp:unit", "dtensor:op", "dtensor:op"],
            "input_shapes": [[], [], [], []],
            # a transformer block's unit (12 parameters), the root unit (wte, wpe, ln_f: 4), a foreach
            # op over 24 DTensors (23 beyond the first), a single DTensor op
            "attrs": [json.dumps({"ops": 12}), json.dumps({"ops": 4}), json.dumps({"ops": 23}), json.dumps({"ops": 0})],
        }
    )
    host = host_costs_us(rows)  # measured on multi-GPU machines at their own speed: host_scale leaves them
    assert host[0] == pytest.approx(1604.656 + 12 * 105.803)  # 2,874.292 us
    assert host[1] == pytest.approx(1604.656 + 4 * 105.803)  # 2,027.868 us
    assert host[2] == pytest.approx(65.071 + 23 * 4.975)  # 179.496 us
    assert host[3] == pytest.approx(65.071)
    # GPT-2 small under FSDP2: 12 block units and the root, 36.5 ms of host time per step.
    assert 12 * host[0] + host[1] == pytest.approx(36_519.372)

