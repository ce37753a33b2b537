"""GPU busy and idle time of steady training steps on a real GPU (launch_gap_probe.py), against Maya's.

    python benchmarks/launch_gaps.py benchmarks/gpu/session37/s37a/launch_gaps \
        --ground-truth benchmarks/gpu/host_phase_h100/lease_d [--maya h100] [--out FILE.md]

Reads each workload's Chrome trace from benchmarks/gpu/launch_gap_probe.py: three steady iterations
under the profiler's CUDA activity alone, their ends marked by a spin kernel. Per iteration: the GPU
span from one mark to the next, the busy time (the union of kernel, memcpy and memset intervals) and
the idle rest; the median iteration is printed. `--ground-truth DIR` also prints the probe's own
CUDA-event step time over the same lease's ground truth (`DIR/ground_truth*.json`): how much the
profiler's per-launch cost slowed the step (a host-bound step slows, a GPU-bound one does not).
`--maya GPU` emulates each workload (2 warm-up + 2 steps) and prints Maya's busy time per iteration
for that GPU, the union of its timeline's GPU intervals in the third iteration: its kernel-time error
apart from any host effect. Held-out workloads are refused.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from ground_truth_repeatability import step_times  # noqa: E402
from kernel_attribution import GPU_CATEGORIES, read_events  # noqa: E402

MARK = "spin_kernel"


def union_us(intervals: list[tuple[float, float]]) -> float:
    """Total length of the union of (start, end) intervals."""
    total, end = 0.0, float("-inf")
    for start, stop in sorted(intervals):
        if stop > max(start, end):
            total += stop - max(start, end)
        end = max(end, stop)
    return total


def iterations(trace: Path) -> list[tuple[float, float]]:
    """(span, busy) milliseconds of each iteration between consecutive marker kernels."""
    events = sorted((e for e in read_events(trace) if e.get("cat") in GPU_CATEGORIES), key=lambda e: e["ts"])
    marks = [e for e in events if MARK in e["name"]]
    out = []
    for a, b in zip(marks, marks[1:]):
        start, stop = a["ts"] + a["dur"], b["ts"]
        busy = union_us([(e["ts"], e["ts"] + e["dur"]) for e in events if start <= e["ts"] < stop and e is not b])
        out.append(((stop - start) / 1e3, busy / 1e3))
    return out


def lease_steps(folder: Path) -> dict[str, float]:
    """Workload -> median step time (ms) of a lease directory's ground_truth*.json files."""
    return step_times(sorted(folder.glob("ground_truth*.json")))


def maya_busy_ms(name: str, gpu: str, root: Path) -> float:
    """Maya's GPU busy time (ms) of the third emulated iteration of `name` on `gpu`."""
    from host_phase_factors import emulated_trace

    from maya.resimulate import simulate_trace_dir
    from maya.simulator.chrome_trace import HOST_TID

    trace = emulated_trace(name, root)
    timeline = root / f"{name}.timeline.json"
    simulate_trace_dir(trace.parents[1], gpu=gpu, timeline_path=timeline)
    spans = [(e["ts"], e["ts"] + e["dur"]) for e in read_events(timeline)
             if e.get("tid", HOST_TID) != HOST_TID and e.get("args", {}).get("iteration") == 2]
    return union_us(spans) / 1e3


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("probe", type=Path, help="launch_gap_probe.py output directory")
    p.add_argument("--ground-truth", type=Path, help="lease directory with ground_truth*.json of the same machine")
    p.add_argument("--maya", metavar="GPU", help="also emulate each workload and print Maya's busy time for GPU")
    p.add_argument("--out", type=Path)
    args = p.parse_args()
    sys.path.insert(0, str(ROOT / "benchmarks" / "validation"))
    from suite import WORKLOADS

    held_out = {w.name for w in WORKLOADS if w.held_out}
    truth = lease_steps(args.ground_truth) if args.ground_truth else {}
    lines = ["| workload | span ms | busy ms | idle ms | idle share | probe step / lease step |"
             + (f" Maya busy ms ({args.maya}) | busy error |" if args.maya else ""),
             "|---|---:|---:|---:|---:|---:|" + ("---:|---:|" if args.maya else "")]
    errors = []
    with tempfile.TemporaryDirectory() as tmp:
        for trace in sorted(args.probe.glob("*.trace.json.gz")):
            name = trace.name.split(".")[0]
            if name in held_out:
                raise SystemExit(f"{name} is held out")
            its = sorted(iterations(trace))
            span, busy = its[len(its) // 2]  # the iteration of median span
            meta = json.loads((args.probe / f"{name}.json").read_text())
            steps = [s for s in meta.get("step_ms") or [] if s]
            ratio = f"{statistics.median(steps) / truth[name]:.2f}" if steps and name in truth else "-"
            row = f"| {name} | {span:.2f} | {busy:.2f} | {span - busy:.2f} | {(span - busy) / span:.1%} | {ratio} |"
            if args.maya:
                predicted = maya_busy_ms(name, args.maya, Path(tmp))
                errors.append(predicted / busy - 1)
                row += f" {predicted:.2f} | {predicted / busy - 1:+.1%} |"
            lines.append(row)
            print(row, flush=True)
    if errors:
        lines += ["", f"- Maya's busy time against the measured: median {statistics.median(errors):+.1%}, "
                      f"median |error| {statistics.median(abs(e) for e in errors):.1%} over {len(errors)} workloads"]
        print(lines[-1])
    if args.out:
        command = f"python benchmarks/launch_gaps.py {args.probe}" + (f" --ground-truth {args.ground_truth}" if args.ground_truth else "") \
            + (f" --maya {args.maya}" if args.maya else "") + f" --out {args.out}"
        args.out.write_text("\n".join(["# Steady steps on a real GPU: busy and idle time", "", f"Made by `{command}` "
                                        "(the iteration of median span of the three profiled).", "", *lines]) + "\n")


if __name__ == "__main__":
    main()
