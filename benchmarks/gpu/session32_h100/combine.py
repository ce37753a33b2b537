"""Join the two halves of the session-32 H100 ground truth into benchmarks/validation/ground_truth_h100.json.

    python benchmarks/gpu/session32_h100/combine.py

The environment is the first half's (same machine and lease: the env.txt files name the same GPU,
driver and versions), with `parts`: each half's command and date. Workloads in the suite's order.
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "validation"))
from suite import WORKLOADS  # noqa: E402

halves = [json.loads((HERE / f"s32_h100_{i}" / "ground_truth.json").read_text()) for i in (1, 2)]
environment = dict(halves[0]["environment"])
for key in ("gpu_name", "driver_version", "torch_version", "cudnn_version"):
    if environment.get(key) != halves[1]["environment"].get(key):
        sys.exit(f"the halves differ in {key}: {environment.get(key)} vs {halves[1]['environment'].get(key)}")
environment["parts"] = [{key: h["environment"].get(key) for key in ("command", "date_utc", "suite_wall_s")} for h in halves]
for key in ("command", "suite_wall_s"):
    environment.pop(key, None)
by_name = {w["name"]: w for h in halves for w in h["workloads"]}
missing = [w.name for w in WORKLOADS if w.name not in by_name]
if missing:
    sys.exit(f"not measured: {', '.join(missing)}")
out = ROOT / "benchmarks" / "validation" / "ground_truth_h100.json"
out.write_text(json.dumps({"environment": environment, "workloads": [by_name[w.name] for w in WORKLOADS]}, indent=1) + "\n")
print(f"wrote {out} ({len(WORKLOADS)} workloads)")
