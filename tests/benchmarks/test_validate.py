"""benchmarks/validate.py: its functions on hand-computed numbers, and where it writes its table."""

import importlib.util
import statistics
import sys
from pathlib import Path

import pytest

VALIDATE_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "validate.py"
_spec = importlib.util.spec_from_file_location("benchmarks_validate", VALIDATE_PATH)
validate = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = validate  # dataclasses look their module up there
_spec.loader.exec_module(validate)

GIB = 1024**3


def iteration(index, ms, peak, reserved=None):
    return {"index": index, "time_ms": ms, "peak_allocated_bytes": peak,
            "peak_reserved_bytes": 2 * peak if reserved is None else reserved}


def test_signed_error():
    assert validate.signed_error(110.0, 100.0) == pytest.approx(0.10)
    assert validate.signed_error(75.0, 100.0) == pytest.approx(-0.25)
    assert validate.signed_error(None, 100.0) is None
    assert validate.signed_error(1.0, None) is None
    assert validate.signed_error(1.0, 0) is None


def test_flag_value():
    assert validate.flag_value(["--model", "1b"], "--warmup", 4) == 4
    assert validate.flag_value(["--warmup", "2", "--steps", "5"], "--warmup", 4) == 2
    assert validate.flag_value(["--steps=7"], "--steps", 12) == 7


def test_timed_iterations_drop_warmup_and_trailing():
    its = [iteration(i, float(i), i) for i in range(7)]
    timed = validate.timed_iterations(its, warmup=2, steps=4)
    assert [it["index"] for it in timed] == [2, 3, 4, 5]  # 6 is beyond warmup + steps
    assert [it["index"] for it in validate.timed_iterations(its, warmup=5)] == [5, 6]


def test_predicted_figures():
    # warm-up iterations 0 and 1 are slow and peak high; they must not count.
    its = [iteration(0, 500.0, 90), iteration(1, 200.0, 80), iteration(2, 10.0, 30), iteration(3, 14.0, 50),
           iteration(4, 11.0, 40, reserved=120), iteration(5, 13.0, 20), iteration(6, 99.0, 99)]
    ms, peak, reserved = validate.predicted_figures(its, warmup=2, steps=4)
    assert ms == pytest.approx(12.0)  # median of 10, 14, 11, 13
    assert peak == 50
    assert reserved == 120  # the largest reserved peak, not the reserved of the largest allocated peak
    assert validate.predicted_figures(its[:2], warmup=2, steps=4) == (None, None, None)


def test_error_stats():
    med, worst, n = validate.error_stats([0.1, -0.3, None, 0.2])
    assert (med, worst, n) == (pytest.approx(0.2), pytest.approx(0.3), 3)
    assert validate.error_stats([None]) == (None, None, 0)


def test_format_table_and_summary():
    rows = [
        validate.Row(name="a", held_out=False, measured_ms=100.0, predicted_ms=110.0,
                     measured_bytes=2 * GIB, predicted_bytes=GIB, status="ok", spread=0.005,
                     measured_reserved=4 * GIB, predicted_reserved=3 * GIB),
        validate.Row(name="b", held_out=True, measured_ms=40.0, predicted_ms=30.0,
                     measured_bytes=4 * GIB, predicted_bytes=5 * GIB, status="ok"),
        validate.Row(name="c", held_out=True, measured_ms=10.0, predicted_ms=None,
                     measured_bytes=GIB, predicted_bytes=None, status="FAILED: Boom | x"),
        validate.Row(name="d", held_out=True, measured_ms=None, predicted_ms=20.0,
                     measured_bytes=None, predicted_bytes=GIB, status="no ground truth"),
    ]
    lines = validate.format_table(rows).splitlines()
    assert lines[0].startswith("| workload | held out | measured ms | leases | lease spread | predicted ms | time error %")
    assert lines[2] == "| a | no | 100.00 | 1 | 0.5% | 110.00 | +10.0% | 2.00 | 1.00 | -50.0% | 4.00 | 3.00 | -25.0% | ok |"
    assert lines[3] == "| b | yes | 40.00 | 1 | — | 30.00 | -25.0% | 4.00 | 5.00 | +25.0% | — | — | — | ok |"
    assert lines[4] == "| c | yes | 10.00 | 1 | — | — | — | 1.00 | — | — | — | — | — | FAILED: Boom \\| x |"
    # no lease measured it
    assert lines[5] == "| d | yes | — | 0 | — | 20.00 | — | — | 1.00 | — | — | — | — | no ground truth |"

    summary = validate.summary_lines(rows)
    assert summary[0] == "- calibration time: median |error| 10.0%, worst |error| 10.0% (a) over 1 of 1 workloads"
    assert summary[2] == "- calibration reserved: median |error| 25.0%, worst |error| 25.0% (a) over 1 of 1 workloads"
    assert summary[3] == "- held-out time: median |error| 25.0%, worst |error| 25.0% (b) over 1 of 3 workloads"
    assert summary[6] == "- all time: median |error| 17.5%, worst |error| 25.0% (b) over 2 of 4 workloads"
    assert summary[7] == "- all memory: median |error| 37.5%, worst |error| 50.0% (a) over 2 of 4 workloads"
    # Only workloads whose ground truth repeated within 2% across leases: a.
    assert summary[9] == ("- repeatable ground truth (lease spread <= 2%) time: median |error| 10.0%, "
                          "worst |error| 10.0% (a) over 1 of 1 workloads")


def test_a_median_over_leases_is_also_scored_against_the_first_lease_alone():
    rows = [
        validate.Row(name="a", held_out=False, measured_ms=100.0, predicted_ms=110.0, measured_bytes=GIB,
                     predicted_bytes=GIB, status="ok", leases=3, first_lease_ms=125.0),
        validate.Row(name="b", held_out=True, measured_ms=40.0, predicted_ms=30.0, measured_bytes=GIB,
                     predicted_bytes=GIB, status="ok"),
    ]
    assert rows[0].time_error == pytest.approx(0.10) and rows[0].first_lease_error == pytest.approx(-0.12)
    assert rows[1].first_lease_error == rows[1].time_error
    summary = validate.summary_lines(rows)
    assert summary[-4] == ("- calibration time against the first lease alone: median |error| 12.0%, "
                           "worst |error| 12.0% (a) over 1 of 1 workloads")
    assert summary[-2] == ("- all time against the first lease alone: median |error| 18.5%, "
                           "worst |error| 25.0% (b) over 2 of 2 workloads")
    # No lease range known yet: none to count.
    assert summary[-1] == ("- predicted step time within the range the leases measured: 0 of 0 "
                           "workloads measured on more than one lease")
    rows[0].lease_range_ms = (95.0, 125.0)
    assert rows[0].within_leases is True and rows[1].within_leases is None
    assert validate.summary_lines(rows)[-1] == ("- predicted step time within the range the leases measured: "
                                                "1 of 1 workloads measured on more than one lease")
    rows[0].lease_range_ms = (111.0, 125.0)
    assert rows[0].within_leases is False
    # With one lease per workload there is nothing else to score against: no such lines.
    rows[0].leases, rows[0].first_lease_ms = 1, None
    assert not any("first lease" in line for line in validate.summary_lines(rows))


def test_lease_step_times_inside_a_host_bound_predictions_host_range_are_counted_per_set():
    def row(name, held_out, host_range, steps):
        return validate.Row(name=name, held_out=held_out, measured_ms=steps[0], predicted_ms=50.0, measured_bytes=GIB,
                            predicted_bytes=GIB, status="ok", leases=len(steps), first_lease_ms=steps[0],
                            lease_steps_ms=steps, host_range_ms=host_range)
    rows = [row("a", False, (40.0, 60.0), (39.0, 40.0, 50.0, 61.0)),   # 2 of 4 inside (ends included)
            row("b", False, None, (10.0, 20.0)),                       # GPU-bound: no range, not counted
            row("c", True, (40.0, 60.0), (45.0, 55.0, 65.0)),          # 2 of 3
            row("d", True, (40.0, 60.0), (50.0,))]                     # one lease: not counted
    lines = validate.summary_lines(rows)
    assert lines[-2] == ("- calibration lease step times within the predicted fast-to-slow host range (the 10th to 90th "
                         "percentile host): 2 of 4 (50%), over the 1 host-bound predictions measured on more than one lease")
    assert lines[-1].startswith("- held-out lease step times within the predicted fast-to-slow host range") and \
        ": 2 of 3 (67%), over the 1 host-bound" in lines[-1]
    rows[2].host_range_ms = None
    assert not validate.summary_lines(rows)[-1].startswith("- held-out lease step times")


def test_lease_medians_take_every_lease_that_measured_the_workload():
    from ground_truth_repeatability import lease_medians

    scored = {"a": 10.0, "b": 20.0}
    leases = {"lease_x": {"a": 30.0, "b": 22.0}, "lease_y": {"a": 11.0}}
    assert lease_medians((scored, leases)) == {"a": (11.0, 3), "b": (21.0, 2)}
    committed = lease_medians()
    assert committed["llama_1b_bf16"][1] >= 2 and committed["llama_1b_bf16"][0] == pytest.approx(201.8, rel=0.01)


def test_each_gpus_scored_ground_truth_has_its_own_leases(tmp_path):
    from ground_truth_repeatability import LEASE_SETS, lease_medians, lease_set, measurements

    assert lease_set(validate.GROUND_TRUTH) == "h200"
    assert lease_set(LEASE_SETS["h100"][0]) == "h100"
    assert lease_set(tmp_path / "ground_truth_h100.json") is None  # any other file is one lease
    scored, leases = measurements("h100")
    assert set(leases) >= {"lease_a", "lease_b", "lease_c"}
    assert leases["lease_c"]["mlp_tiny_adamw"] != measurements("h200")[1]["lease_c"]["mlp_tiny_adamw"]
    # A lease measured in two parts counts once, with both parts' workloads (20 + 10: the suite before
    # session 38's seven); the scored file holds the whole suite, the seven measured separately.
    assert len(leases["lease_c"]) == 30
    assert len(scored) == 37
    # The scored file is one lease; a lease that did not measure the workload does not count.
    times = [scored["convnext_tiny_bf16"], *(lease["convnext_tiny_bf16"] for lease in leases.values() if "convnext_tiny_bf16" in lease)]
    median, n = lease_medians((scored, leases))["convnext_tiny_bf16"]
    assert n == len(times) >= 3 and median == pytest.approx(statistics.median(times))


def test_lease_spreads_come_from_the_committed_repeat_measurements():
    from ground_truth_repeatability import lease_spreads

    spreads = lease_spreads()
    # GPU-bound: the same step on every lease; host-bound: it moves with the CPU.
    assert spreads["llama_1b_bf16"] < 0.02 and spreads["gpt2_124m_bf16"] < 0.02  # repeatable: within 2%
    assert spreads["mlp_tiny_adamw"] > 0.2


def test_lease_speeds_compare_each_lease_with_the_other_measurements():
    from ground_truth_repeatability import lease_speeds

    scored = {"host": 10.0, "gpu": 50.0, "two": 10.0}
    leases = {"lease_x": {"host": 8.0, "gpu": 50.1, "two": 20.0}, "lease_y": {"host": 12.0, "gpu": 49.9}}
    speeds = lease_speeds((scored, leases))
    # Only "host" moved by more than 5% on three or more leases: "gpu" repeats, "two" has two leases.
    assert speeds == {"lease_x": [pytest.approx(8.0 / 11.0)], "lease_y": [pytest.approx(12.0 / 9.0)]}
    committed = lease_speeds()
    assert 0.8 < statistics.median(committed["lease_p"]) < 1.0  # session 47's H200: a fast host


def test_first_line_names_the_exception():
    tb = "Traceback (most recent call last):\n  File \"x.py\", line 1\nRuntimeError: boom\n\n"
    assert validate.first_line(tb) == "RuntimeError: boom"
    assert validate.first_line(None) == "unknown error"


def test_a_part_of_the_suite_never_replaces_the_committed_table(tmp_path, capsys):
    # Session 26's spot checks (`--only`) overwrote results_h200.md with a four-row table, and three
    # commits took it along: --only now writes only where --out says.
    committed = validate.DEFAULT_OUT.read_bytes()
    assert validate.main(["--only", "dlrm_fp32"]) == 0
    assert validate.DEFAULT_OUT.read_bytes() == committed
    assert "not written: --only runs part of the suite" in capsys.readouterr().err
    assert validate.main(["--only", "dlrm_fp32", "--out", str(tmp_path / "part.md")]) == 0
    part = (tmp_path / "part.md").read_text()
    assert "| dlrm_fp32 | no |" in part and part.count("\n| ") == 2  # the header row and dlrm's


def test_another_gpu_is_scored_on_its_own_ground_truth_as_one_lease(tmp_path, capsys):
    import json

    h200 = json.loads(validate.GROUND_TRUTH.read_text())
    dlrm = next(w for w in h200["workloads"] if w["name"] == "dlrm_fp32")
    truth = tmp_path / "ground_truth_h100.json"
    truth.write_text(json.dumps({"environment": {"gpu_name": "NVIDIA H100 80GB HBM3", "date_utc": "x"},
                                 "workloads": [{**dlrm, "median_step_ms": 20.0}]}))
    with pytest.raises(SystemExit):  # the committed H200 table is not the place for another GPU's
        validate.main(["--gpu", "h100", "--ground-truth", str(truth)])
    with pytest.raises(SystemExit):
        validate.main(["--only", "dlrm_fp32", "--ground-truth", str(tmp_path / "missing.json")])
    assert "no ground truth file" in capsys.readouterr().err
    for gpu in ("h200", "h100"):
        assert validate.main(["--only", "dlrm_fp32", "--gpu", gpu, "--ground-truth", str(truth),
                              "--out", str(tmp_path / f"{gpu}.md")]) == 0
    rows = {}
    for gpu in ("h200", "h100"):
        text = (tmp_path / f"{gpu}.md").read_text()
        assert text.startswith("# Maya validation: predictions vs. NVIDIA H100 80GB HBM3 ground truth")
        assert ("H200 model's, scaled by the catalog's" in text) == (gpu == "h100")
        cells = [c.strip() for c in next(line for line in text.splitlines() if line.startswith("| dlrm_fp32")).split("|")]
        rows[gpu] = cells
        assert cells[3] == "20.00" and cells[4] == "1"  # this file's step time, one lease, no H200 lease median
    # DLRM's fp32 step is partly memory-bound: the H100's lower bandwidth predicts it longer
    assert float(rows["h100"][6]) > float(rows["h200"][6])
