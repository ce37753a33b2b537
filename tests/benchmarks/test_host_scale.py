"""benchmarks/host_scale.py: one multiplier of the shipped host costs, fitted on calibration workloads
measured on several leases, and what maya.estimator.host_cost does with it."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import host_scale as host_scale_fit  # noqa: E402


def test_only_calibration_workloads_measured_on_three_leases_or_more_count():
    medians = host_scale_fit.calibration_medians()
    assert "mlp_tiny_adamw" in medians and "hf_llama_bf16" in medians
    assert "mlp_tiny_deep_sgd_bf16" not in medians  # held out: never read
    assert "hf_qwen2_0p5b_bf16" not in medians  # calibration, but one lease measured it (session 47)
    assert "lstm_lm_3layer_seq256_fp32" not in medians


def test_the_factor_kept_is_the_least_mean_log_error_over_the_workloads():
    grid = host_scale_fit.GRID
    measured = {"host": 10.0, "gpu": 20.0, "other_host": 30.0, "third": 5.0}
    steps = {
        "host": {f: 10.0 * f / 0.8 for f in grid},          # right at 0.80
        "gpu": {f: 20.0 for f in grid},                     # the GPU sets it: any factor
        "other_host": {f: 30.0 * f / 0.86 for f in grid},   # right at 0.86
        "third": {f: 5.0 * f / 0.95 for f in grid},         # right at 0.95
    }
    # The sum of |log| errors is least at the median of the host-set workloads' own factors.
    assert host_scale_fit.best_factor(steps, measured) == pytest.approx(0.86)
    del steps["gpu"], measured["gpu"]
    assert host_scale_fit.best_factor(steps, measured) == pytest.approx(0.86)


def test_the_shipped_factor_is_written_by_the_script():
    data = json.loads(host_scale_fit.HOST_FILE.read_text())
    assert data["host_scale"] in host_scale_fit.GRID
    assert data["host_scale_method"].startswith("python benchmarks/host_scale.py --write")


def test_print_report_prints_the_lines_and_writes_them_only_when_asked(tmp_path, capsys):
    out = tmp_path / "report.md"
    host_scale_fit.print_report(["# t", "", "| a |"], out)
    assert out.read_text() == "# t\n\n| a |\n"
    assert "| a |" in capsys.readouterr().out
    host_scale_fit.print_report(["x"], None)
    assert capsys.readouterr().out == "x\n\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]
