"""Where the GPU idles in one training step: a profiled H200 trace against Maya's predicted timeline.

    python benchmarks/gpu_gaps.py --measured benchmarks/gpu/op_times_h200/hf_bert_bf16.trace.json.gz
    python benchmarks/gpu_gaps.py --predicted TRACE_DIR/timeline.json --iteration 5

Each idle gap on a GPU stream (from one kernel's end to the next kernel's start, longer than
`--min-gap-us`) is charged to the op whose kernel ends it: in a profiled trace (`op_time_probe.py
--chrome`: one iteration under torch.profiler) the innermost CPU op around the runtime call that
launched that kernel (`kernel_attribution.launch_owners`); in Maya's Perfetto timeline (`maya
emulate` writes `timeline.json`, its events carry `iteration`) the predicted GPU op itself. Prints
the span from the first kernel's start to the last kernel's end, the busy and idle time in it, and
the ops with the most idle time before them: whether the real GPU waits for the host where Maya says
it does not. Under the profiler every op costs the host more, so a profiled trace's gaps bound the
real ones from above.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_attribution import GPU_CATEGORIES, launch_owners, read_events  # noqa: E402

from maya.simulator.chrome_trace import HOST_TID  # noqa: E402


def _gaps(gpu: list[dict], min_gap_us: float) -> tuple[list[tuple[float, dict]], float, float]:
    """(gap, the event that ends it) per gap longer than `min_gap_us` on each stream, the span and
    the busy time; events of one stream are taken in start order."""
    by_stream: dict[tuple, list[dict]] = {}
    for e in gpu:
        by_stream.setdefault((e.get("pid"), e.get("tid")), []).append(e)
    gaps, busy = [], 0.0
    for events in by_stream.values():
        events.sort(key=lambda e: e["ts"])
        busy += sum(e["dur"] for e in events)
        for before, after in zip(events, events[1:]):
            gap = after["ts"] - (before["ts"] + before["dur"])
            if gap > min_gap_us:
                gaps.append((gap, after))
    span = max(e["ts"] + e["dur"] for e in gpu) - min(e["ts"] for e in gpu)
    return gaps, span, busy


def measured_gaps(events: list[dict], min_gap_us: float) -> tuple[Counter, Counter, float, float]:
    """Idle microseconds and gap counts per launching CPU op of a profiled trace's complete events
    (`read_events`), its span and busy time."""
    gpu = [e for e in events if e.get("cat") in GPU_CATEGORIES]
    if not gpu:
        raise SystemExit("no GPU kernels in the measured trace")
    owner_of = launch_owners(events)
    gaps, span, busy = _gaps(gpu, min_gap_us)
    idle, count = Counter(), Counter()
    for gap, activity in gaps:
        name = owner_of(activity) or "(no CPU op)"
        idle[name] += gap
        count[name] += 1
    return idle, count, span, busy


def predicted_gaps(events: list[dict], iteration: int, min_gap_us: float) -> tuple[Counter, Counter, float, float]:
    """Idle microseconds and gap counts per GPU op of one iteration of Maya's timeline (its complete
    events, `read_events`), its span and busy time."""
    gpu = [e for e in events if e.get("tid") != HOST_TID
           and e.get("args", {}).get("iteration") == iteration]
    if not gpu:
        found = sorted({e.get("args", {}).get("iteration") for e in events} - {None})
        raise SystemExit(f"no GPU op of iteration {iteration} in the timeline (its iterations: {found})")
    gaps, span, busy = _gaps(gpu, min_gap_us)
    idle, count = Counter(), Counter()
    for gap, op in gaps:
        idle[op["name"]] += gap
        count[op["name"]] += 1
    return idle, count, span, busy


def report(label: str, idle: Counter, count: Counter, span: float, busy: float, top: int) -> str:
    lines = [f"{label}: span {span / 1e3:.2f} ms, GPU busy {busy / 1e3:.2f} ms, idle in gaps "
             f"{sum(idle.values()) / 1e3:.2f} ms",
             "| op before whose kernel the GPU idled | idle ms | gaps |", "|---|---:|---:|"]
    lines += [f"| {name} | {us / 1e3:.3f} | {count[name]} |" for name, us in idle.most_common(top)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--measured", type=Path, help="profiled Chrome trace (.json or .json.gz)")
    p.add_argument("--predicted", type=Path, help="Maya's timeline.json")
    p.add_argument("--iteration", type=int, default=1, help="iteration of the predicted timeline (default 1)")
    p.add_argument("--min-gap-us", type=float, default=3.0, help="shorter gaps are kernel-to-kernel latency")
    p.add_argument("--top", type=int, default=15)
    args = p.parse_args(argv)
    if args.measured is None and args.predicted is None:
        p.error("give --measured, --predicted or both")
    if args.measured is not None:
        print(report(f"measured ({args.measured})", *measured_gaps(read_events(args.measured), args.min_gap_us), args.top))
    if args.predicted is not None:
        gaps = predicted_gaps(read_events(args.predicted), args.iteration, args.min_gap_us)
        print(report(f"predicted ({args.predicted}, iteration {args.iteration})", *gaps, args.top))


if __name__ == "__main__":
    main()
