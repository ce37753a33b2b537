"""Join ground-truth files measured in parts on one lease (measure_ground_truth.py --only ...) into one.

    python benchmarks/validation/combine_ground_truth.py PART.json PART.json ... --out FILE.json

The environment is the first part's (the parts must name the same GPU, driver, torch, cuDNN and
allocator setting), with `parts`: each part's command, date and wall time. Workloads come in the suite's
order; a suite workload no part measured is an error.
"""

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suite import WORKLOADS  # noqa: E402

SAME = ("gpu_name", "driver_version", "torch_version", "cudnn_version", "alloc_conf")


def combine(parts: list[dict]) -> dict:
    """One ground truth from `parts` (each a measure_ground_truth.py output); ValueError if they disagree."""
    environment = dict(parts[0]["environment"])
    for part in parts[1:]:
        for key in SAME:
            if environment.get(key) != part["environment"].get(key):
                raise ValueError(f"the parts differ in {key}: {environment.get(key)} vs {part['environment'].get(key)}")
    environment["parts"] = [{key: p["environment"].get(key) for key in ("command", "date_utc", "suite_wall_s")}
                            for p in parts]
    for key in ("command", "suite_wall_s"):
        environment.pop(key, None)
    by_name = {w["name"]: w for p in parts for w in p["workloads"]}
    missing = [w.name for w in WORKLOADS if w.name not in by_name]
    if missing:
        raise ValueError(f"not measured: {', '.join(missing)}")
    return {"environment": environment, "workloads": [by_name[w.name] for w in WORKLOADS]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("parts", nargs="+", type=Path)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    try:
        joined = combine([json.loads(path.read_text()) for path in args.parts])
    except ValueError as e:
        p.error(str(e))
    args.out.write_text(json.dumps(joined, indent=1) + "\n")
    print(f"wrote {args.out} ({len(joined['workloads'])} workloads)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
