"""Join ground-truth files measured in parts on one lease (measure_ground_truth.py --only ...) into one.

    python benchmarks/validation/combine_ground_truth.py PART.json PART.json ... --out FILE.json
    python benchmarks/validation/combine_ground_truth.py PART.json --into FILE.json

The environment is the first part's (the parts must name the same GPU, driver, torch, cuDNN and
allocator setting), with `parts`: each part's command, date and wall time. Workloads come in the suite's
order; a suite workload no part measured is an error.

With `--into`, the parts' workloads are added to an existing ground truth measured on another lease (a
workload added to the suite after it), each with `measured_separately`: its part's date and command; the
file keeps its indent.
The parts must name the file's GPU, driver, torch and cuDNN; a workload the file already has is an
error, so a measurement is never silently replaced.
"""

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suite import WORKLOADS  # noqa: E402

SAME = ("gpu_name", "driver_version", "torch_version", "cudnn_version", "alloc_conf")


def check_same(reference: dict, other: dict, differ: str) -> None:
    """ValueError naming the first `SAME` key in which environment `other` differs from `reference`
    (`differ` says which two differ: "the parts differ"). An allocator setting left unset reads as None in older files and
    "" in newer ones: the same."""
    for key in SAME:
        if (reference.get(key) or None) != (other.get(key) or None):
            raise ValueError(f"{differ} in {key}: {reference.get(key)} vs {other.get(key)}")


def combine(parts: list[dict]) -> dict:
    """One ground truth from `parts` (each a measure_ground_truth.py output); ValueError if they disagree."""
    environment = dict(parts[0]["environment"])
    for part in parts[1:]:
        check_same(environment, part["environment"], "the parts differ")
    environment["parts"] = [{key: p["environment"].get(key) for key in ("command", "date_utc", "suite_wall_s")}
                            for p in parts]
    for key in ("command", "suite_wall_s"):
        environment.pop(key, None)
    by_name = {w["name"]: w for p in parts for w in p["workloads"]}
    missing = [w.name for w in WORKLOADS if w.name not in by_name]
    if missing:
        raise ValueError(f"not measured: {', '.join(missing)}")
    return {"environment": environment, "workloads": [by_name[w.name] for w in WORKLOADS]}


def add_separately(base: dict, parts: list[dict]) -> dict:
    """`base` with the workloads of `parts` added, each marked `measured_separately`, in the suite's order;
    ValueError if a part names another GPU, driver, torch or cuDNN, or measures a workload `base` has."""
    environment = base["environment"]
    by_name = {w["name"]: w for w in base["workloads"]}
    for part in parts:
        check_same(environment, part["environment"], "the part differs from the file")
        for workload in part["workloads"]:
            if workload["name"] in by_name:
                raise ValueError(f"{workload['name']} is already in the file: not replaced")
            by_name[workload["name"]] = dict(workload, measured_separately={
                key: part["environment"].get(key) for key in ("date_utc", "command")})
    order = {w.name: i for i, w in enumerate(WORKLOADS)}
    unknown = sorted(set(by_name) - set(order))
    if unknown:
        raise ValueError(f"not in the suite: {', '.join(unknown)}")
    return {"environment": environment, "workloads": sorted(by_name.values(), key=lambda w: order[w["name"]])}


def json_indent(text: str) -> int | None:
    """The indent of a JSON file's text (the spaces before its second line's key; None on one line), so
    that adding to a ground truth keeps its layout and its diff shows the additions alone."""
    lines = text.splitlines()
    if len(lines) < 2:
        return None
    return len(lines[1]) - len(lines[1].lstrip(" "))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("parts", nargs="+", type=Path)
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", type=Path, help="write the parts joined into one ground truth here")
    where.add_argument("--into", type=Path, help="add the parts' workloads to this ground truth, in place")
    args = p.parse_args(argv)
    parts = [json.loads(path.read_text()) for path in args.parts]
    existing = args.into.read_text() if args.into else None
    try:
        joined = add_separately(json.loads(existing), parts) if existing is not None else combine(parts)
    except ValueError as e:
        p.error(str(e))
    target = args.into or args.out
    indent = json_indent(existing) if existing is not None else 1
    target.write_text(json.dumps(joined, indent=indent) + "\n")
    print(f"wrote {target} ({len(joined['workloads'])} workloads)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
