"""benchmarks/validation/combine_ground_truth.py: joining parts, and adding a later lease's workloads."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "validation"))
import combine_ground_truth  # noqa: E402
from suite import WORKLOADS  # noqa: E402

ENV = {"gpu_name": "NVIDIA H100 80GB HBM3", "driver_version": "580", "torch_version": "2.11.0",
       "cudnn_version": 91900}


def part(names, date="2026-12-06T15:32:43+00:00", **env):
    command = ["python3", "measure_ground_truth.py", "--only", *names]
    return {"environment": dict(ENV, date_utc=date, command=command, suite_wall_s=1.0, **env),
            "workloads": [{"name": n, "ok": True, "median_step_ms": 10.0 + i} for i, n in enumerate(names)]}


def test_combine_needs_every_workload_of_the_suite():
    names = [w.name for w in WORKLOADS]
    joined = combine_ground_truth.combine([part(names[:5]), part(names[5:])])
    assert [w["name"] for w in joined["workloads"]] == names
    assert len(joined["environment"]["parts"]) == 2
    with pytest.raises(ValueError, match=f"not measured: {names[-1]}"):
        combine_ground_truth.combine([part(names[:-1])])


def test_a_later_lease_is_added_in_the_suites_order_and_marked(tmp_path):
    names = [w.name for w in WORKLOADS]
    base = {"environment": dict(ENV, alloc_conf=None), "workloads": part(names[:3] + names[5:])["workloads"]}
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(base, indent=2))
    later = tmp_path / "later.json"
    later.write_text(json.dumps(part([names[4], names[3]], alloc_conf="")))  # unset allocator either way
    assert combine_ground_truth.main([str(later), "--into", str(path)]) == 0
    added = json.loads(path.read_text())
    assert path.read_text().startswith('{\n  "environment"')  # the file keeps its indent
    assert [w["name"] for w in added["workloads"]] == names
    assert "measured_separately" not in added["workloads"][2]
    marked = added["workloads"][3]
    assert marked["median_step_ms"] == 11.0
    assert marked["measured_separately"] == {"date_utc": "2026-12-06T15:32:43+00:00",
                                             "command": ["python3", "measure_ground_truth.py", "--only",
                                                         names[4], names[3]]}


def test_adding_never_replaces_a_measurement_or_mixes_gpus():
    names = [w.name for w in WORKLOADS]
    base = {"environment": dict(ENV), "workloads": part(names[:3])["workloads"]}
    with pytest.raises(ValueError, match=f"{names[1]} is already in the file"):
        combine_ground_truth.add_separately(base, [part([names[1]])])
    with pytest.raises(ValueError, match="differs from the file in gpu_name"):
        combine_ground_truth.add_separately(base, [part([names[4]], gpu_name="NVIDIA H200")])
    with pytest.raises(ValueError, match="not in the suite: no_such_workload"):
        combine_ground_truth.add_separately(base, [part(["no_such_workload"])])
