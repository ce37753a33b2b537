"""benchmarks/tune_quality: the GPU measurement covers exactly the study's grid; the comparison's arithmetic."""

import importlib.util

import pandas as pd
import pytest

from maya.tune.config_file import load_study
from maya.tune.space import dimension_values

from conftest import ROOT

QUALITY = ROOT / "benchmarks" / "tune_quality"


def _module(name):
    spec = importlib.util.spec_from_file_location(name, QUALITY / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_measured_configurations_are_the_studys_grid():
    measure = _module("measure_h200")
    study = load_study(ROOT / "examples" / "tune_gpt.py")
    grid = [dict(zip(["micro_batch", "checkpoint", "precision"], values)) for values in __import__("itertools").product(
        *(dimension_values(study.search_space[k]) for k in ("micro_batch", "checkpoint", "precision")))]
    assert sorted(map(str, measure.CONFIGS)) == sorted(map(str, grid)) and len(grid) <= 12
    assert measure.GLOBAL_BATCH == study.global_batch
    fixed = dict(zip(study.script_args[::2], study.script_args[1::2]))
    assert dict(zip(measure.MODEL_ARGS[::2], measure.MODEL_ARGS[1::2])) == {k: v for k, v in fixed.items() if k != "--steps"}
    argv = measure.script_argv({"micro_batch": 16, "checkpoint": "none", "precision": "bf16"}, steps=12)
    assert argv[argv.index("--accum") + 1] == "4" and argv[argv.index("--steps") + 1] == "12"


def _measured(times_ms):
    rows = [{"micro_batch": mb, "checkpoint": "none", "precision": "bf16", "measured_ok": True, "measured_oom": False,
             "measured_step_ms": t, "measured_allocated_bytes": 2**30} for mb, t in times_ms.items()]
    return pd.DataFrame(rows)


@pytest.mark.parametrize(("pick_measured_ms", "gap", "met"), [(152.0, 152 / 150 - 1, True), (160.0, 160 / 150 - 1, False)])
def test_gap_of_mayas_pick_to_the_measured_best(pick_measured_ms, gap, met):
    compare = _module("compare")
    predicted = pd.DataFrame([
        {"micro_batch": 64, "checkpoint": "none", "precision": "bf16", "status": "ok", "step_time_ms": 140.0, "peak_allocated_bytes": 2**30},
        {"micro_batch": 32, "checkpoint": "none", "precision": "bf16", "status": "ok", "step_time_ms": 145.0, "peak_allocated_bytes": 2**30},
        {"micro_batch": 16, "checkpoint": "none", "precision": "bf16", "status": "ok", "step_time_ms": 170.0, "peak_allocated_bytes": 2**30},
    ])
    # Maya picks micro-batch 64 (140 ms predicted); the measured best is micro-batch 32 at 150 ms.
    table, summary = compare.compare(predicted, _measured({64: pick_measured_ms, 32: 150.0, 16: 175.0}))
    assert summary["maya_pick"]["micro_batch"] == 64 and summary["measured_best"]["micro_batch"] == 32
    assert summary["gap"] == pytest.approx(gap) and summary["within_tolerance"] is met
    assert summary["spearman"] == pytest.approx(0.5)  # ranks (1, 2, 3) against (2, 1, 3)


def test_recorded_h200_measurement_meets_the_bar():
    # The committed predictions (maya tune examples/tune_gpt.py) against the committed H200 measurement.
    compare = _module("compare")
    measured, _ = compare.measured_table(QUALITY / "measured_h200.json")
    _, summary = compare.compare(pd.read_csv(QUALITY / "maya_predictions.csv"), measured)
    assert summary["within_tolerance"] and summary["gap"] <= compare.TOLERANCE
    assert summary["spearman"] > 0.9 and summary["feasibility_agrees"]
    assert summary["median_abs_memory_error"] < 0.01
