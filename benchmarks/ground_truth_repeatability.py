"""How much the validation suite's measured step times move between leases (machines) of one GPU type.

    python benchmarks/ground_truth_repeatability.py [--gpu h200|h100] [--out FILE.md]

Compares the ground truth a validation table is scored on (benchmarks/validation/ground_truth_<gpu>.json)
with the same workloads measured by the same script on other leases of that GPU
(benchmarks/gpu/host_phase_<gpu>/lease_*/ground_truth*.json, see its COMMANDS.md; `LEASE_SETS`). A workload whose step is set by the GPU repeats
within a few percent; one whose step is set by the host (eager PyTorch issuing small kernels) moves
with the lease's CPU. Prints a markdown table: each lease's median step time, its difference from the
scored ground truth, and the largest spread (max / min - 1) per workload.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LEASE_SETS = {gpu: (ROOT / "benchmarks" / "validation" / f"ground_truth_{gpu}.json", ROOT / "benchmarks" / "gpu" / f"host_phase_{gpu}")
              for gpu in ("h200", "h100")}
"""GPU -> (the ground truth its validation table is scored on, the folder of its other leases)."""


def lease_set(ground_truth: Path) -> str | None:
    """The GPU whose scored ground truth `ground_truth` is (its other leases join its medians), else None."""
    return next((gpu for gpu, (scored, _) in LEASE_SETS.items() if Path(ground_truth).resolve() == scored.resolve()), None)


def step_times(paths: list[Path]) -> dict[str, float]:
    """Workload -> median step time (ms) over the successful entries of measure_ground_truth.py files."""
    out = {}
    for path in paths:
        for w in json.loads(path.read_text())["workloads"]:
            if w.get("median_step_ms") is not None and w.get("returncode", 0) == 0:
                out[w["name"]] = w["median_step_ms"]
    return out


def measurements(gpu: str = "h200") -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """(the scored ground truth's step times, lease name -> that lease's step times) of `gpu`'s `LEASE_SETS`."""
    scored, folder = LEASE_SETS[gpu]
    leases = {d.name: step_times(sorted(d.glob("ground_truth*.json"))) for d in sorted(folder.iterdir())
              if d.is_dir() and any(d.glob("ground_truth*.json"))}
    return step_times([scored]), leases


Measured = tuple[dict[str, float], dict[str, dict[str, float]]]
"""What `measurements()` returns: the scored ground truth's step times and each lease's."""


def lease_times(measured: Measured | None = None) -> dict[str, list[float]]:
    """Workload -> its step times (ms): the scored ground truth's first, then every other lease that
    measured it; `measured` as `measurements()` returns it, read from the files when None."""
    scored, leases = measured or measurements()
    return {name: [base, *(t[name] for t in leases.values() if name in t)] for name, base in scored.items()}


def lease_spreads(measured: Measured | None = None) -> dict[str, float]:
    """Workload -> max / min - 1 of its step time over the leases that measured it (only workloads
    measured on more than one lease)."""
    return {name: max(t) / min(t) - 1.0 for name, t in lease_times(measured).items() if len(t) > 1}


def lease_medians(measured: Measured | None = None) -> dict[str, tuple[float, int]]:
    """Workload -> (median of its step time over the leases that measured it, how many leases that is)."""
    return {name: (statistics.median(t), len(t)) for name, t in lease_times(measured).items()}


HOST_MOVED_SPREAD = 0.05
"""`lease_speeds` reads the workloads whose step moved by more than this between leases."""


def lease_speeds(measured: Measured | None = None) -> dict[str, list[float]]:
    """Lease -> its step time over the median of every other measurement of the same workload, for
    each workload measured on three or more leases whose spread exceeds `HOST_MOVED_SPREAD` (the steps
    a host can move): below 1 on a lease with a fast host, above 1 on a slow one. The scored ground
    truth, which may join several leases' measurements, counts among the others but gets no entry."""
    scored, leases = measured or measurements()
    times, spreads = lease_times((scored, leases)), lease_spreads((scored, leases))
    moved = [n for n, s in spreads.items() if s > HOST_MOVED_SPREAD and len(times[n]) >= 3]
    out = {}
    for lease, steps in leases.items():
        ratios = []
        for name in moved:
            if name in steps:
                others = [scored[name], *(t[name] for other, t in leases.items() if other != lease and name in t)]
                ratios.append(steps[name] / statistics.median(others))
        if ratios:
            out[lease] = ratios
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpu", choices=sorted(LEASE_SETS), default="h200")
    p.add_argument("--out", type=Path, default=None,
                   help="markdown file to write (default: benchmarks/results/ground_truth_repeatability_<gpu>.md)")
    args = p.parse_args()
    out = args.out or ROOT / "benchmarks" / "results" / f"ground_truth_repeatability_{args.gpu}.md"
    scored_file, folder = LEASE_SETS[args.gpu]
    scored, leases = measured = measurements(args.gpu)
    lines = [
        f"# Ground truth repeatability across {args.gpu.upper()} leases",
        "",
        f"- Scored ground truth: `{scored_file.relative_to(ROOT)}`; other leases: `{folder.relative_to(ROOT)}/<lease>/ground_truth*.json`"
        " (commands in its COMMANDS.md). All by `benchmarks/validation/measure_ground_truth.py`, median CUDA-event step time.",
        f"- Made by `python {Path(__file__).relative_to(ROOT)}{'' if args.gpu == 'h200' else ' --gpu ' + args.gpu}`.",
        "",
        "| workload | scored ms | " + " | ".join(f"{name} ms (vs scored)" for name in leases) + " | spread |",
        "|---|---:|" + "---:|" * len(leases) + "---:|",
    ]
    spreads = lease_spreads(measured)
    for name, base in scored.items():
        spread = f"{spreads[name]:.1%}" if name in spreads else "-"
        cells = [f"{t[name]:.2f} ({t[name] / base - 1:+.1%})" if name in t else "-" for t in leases.values()]
        lines.append(f"| {name} | {base:.2f} | " + " | ".join(cells) + f" | {spread} |")
    small = sorted(n for n, s in spreads.items() if s <= 0.02)
    lines += [
        "",
        f"- {len(spreads)} workloads measured on more than one lease; median spread {statistics.median(spreads.values()):.1%}, "
        f"largest {max(spreads.values()):.1%} ({max(spreads, key=spreads.get)}).",
        f"- Within 2% on every lease ({len(small)}): {', '.join(small)}.",
        f"- How fast each lease's host was: its step over the median of the workload's other measurements, over the"
        f" workloads measured on three or more leases that moved by more than {HOST_MOVED_SPREAD:.0%} (the median, and the"
        " range; below 1 is a fast host):",
    ]
    lines += [f"  - {lease}: {statistics.median(r):.3f} ({min(r):.3f}-{max(r):.3f}) over {len(r)} workloads"
              for lease, r in lease_speeds(measured).items()]
    text = "\n".join(lines) + "\n"
    print(text)
    out.write_text(text)


if __name__ == "__main__":
    main()
