"""benchmarks/preregistered.py: registered predictions scored against the committed ground truth."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import preregistered  # noqa: E402
from ground_truth_repeatability import lease_medians, measurements  # noqa: E402

TABLE = """# registered

| workload | held out | H200 step ms | H200 peak allocated GiB | H100 step ms | H100 peak allocated GiB |
|---|---|---:|---:|---:|---:|
| gpt2_124m_bf16 | no | {ms} | {gib} | 1.0 | 1.0 |
| not_yet_measured | yes | 10.0 | 1.0 | 1.0 | 1.0 |

A later table is not read:

| workload | compute |
|---|---:|
| gpt2_124m_bf16 | 55% |
"""


def test_scores_the_registered_figures_against_the_lease_median(tmp_path):
    truth = {w["name"]: w for w in json.loads((ROOT / "benchmarks/validation/ground_truth_h200.json").read_text())["workloads"]}
    measured_ms, leases = lease_medians(measurements("h200"))["gpt2_124m_bf16"]
    measured_gib = truth["gpt2_124m_bf16"]["max_memory_allocated"] / 1024**3
    path = tmp_path / "reg.md"
    path.write_text(TABLE.format(ms=measured_ms * 1.1, gib=measured_gib * 0.5))
    registered = preregistered.registered_predictions(path, "h200")
    assert registered["not_yet_measured"] == {"held_out": True, "step_ms": 10.0, "allocated_gib": 1.0,
                                              "reserved_gib": None}
    out = preregistered.score(registered, "h200")
    row = next(line for line in out.splitlines() if line.startswith("| gpt2_124m_bf16 "))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2:4] == [f"{measured_ms:.2f}", str(leases)] and cells[6] == "+10.0%" and cells[9] == "-50.0%"
    assert "| not_yet_measured | yes | — | 0 | — | 10.00 |" in out and out.rstrip().count("no ground truth") == 1
    assert "- calibration time: median |error| 10.0%, worst |error| 10.0% (gpt2_124m_bf16) over 1 of 1 workloads" in out
    assert "- held-out time: median |error| —, worst |error| — over 0 of 1 workloads" in out  # nothing held out measured


def test_a_file_without_the_gpus_columns_is_named(tmp_path, capsys):
    path = tmp_path / "reg.md"
    path.write_text("| workload | held out | H200 step ms | H200 peak allocated GiB |\n|---|---|---:|---:|\n")
    with pytest.raises(ValueError, match="no 'H100 step ms'"):
        preregistered.registered_predictions(path, "h100")
    assert preregistered.main(["--gpu", "h100", "--registered", str(path)]) == 1
    assert "H100 step ms" in capsys.readouterr().err


def test_the_committed_file_has_both_gpus_predictions_of_suite_workloads():
    sys.path.insert(0, str(ROOT / "benchmarks" / "validation"))
    from suite import WORKLOADS

    held_out = {w.name: w.held_out for w in WORKLOADS}
    for gpu in ("h200", "h100"):
        registered = preregistered.registered_predictions(preregistered.REGISTERED, gpu)
        assert len(registered) == 7
        assert {name: r["held_out"] for name, r in registered.items()} == {name: held_out[name] for name in registered}
