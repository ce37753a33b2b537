"""Where a real step's GPU time goes per phase, against Maya's timeline of the same step.

    python benchmarks/phase_spans.py --probe benchmarks/gpu/session18_h200/s18b/phases [--op-times DIR] [--out FILE]

Reads host_phase_probe.py's output (per workload, the CUDA events it recorded at the first module
forward, around the backward and around the optimizer step: `gpu_phases`) and, where
benchmarks/gpu/op_times_h200 (or --op-times) has the workload's profiled Chrome trace, the kernel time per phase of
that profiled iteration. It emulates each workload (2 warm-up + 2 steps) and simulates it as `maya
emulate` does, then puts the same marks on Maya's timeline: a mark is reached on the GPU when the
host issues the phase's first GPU op and all GPU work issued before it has ended.

Per phase (forward: first module forward to backward; backward: to the optimizer step, with what
runs between them such as gradient clipping; optimizer: to the next forward) it prints the measured
span, the profiled kernel time (busy) and their difference (idle: the GPU waited for the host or a
sync), and Maya's span, busy and idle. A span error with a matching busy error is kernel time; one
with matching idle is host or sync time. Held-out workloads are refused.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OP_TIMES = ROOT / "benchmarks" / "gpu" / "op_times_h200"
PHASES = ("forward", "backward", "optimizer")
GPU_KINDS = ("kernel", "memcpy", "collective")
sys.path.insert(0, str(ROOT / "benchmarks"))
from host_phase_factors import emulated_trace  # noqa: E402
from kernel_attribution import read_events  # noqa: E402


def measured_spans(probe: dict) -> dict[str, float]:
    """Median GPU ms per phase over the probe's measured steps (the marks' CUDA events)."""
    steps = probe["steps"][-len(probe["cuda_event_step_ms"]):-1]  # the last step has no next forward

    def median(*keys):
        return statistics.median(sum(s["gpu_phases"][k] for k in keys) for s in steps)

    return {"forward": median("forward_ms"), "backward": median("backward_ms", "backward_end_ms"),
            "optimizer": median("optimizer_ms", "optimizer_end_ms")}


def profiled_busy(chrome_trace: Path) -> dict[str, float]:
    """Kernel ms per phase of a profiled iteration, each kernel placed by when the host launched it:
    before the first autograd node (forward), before `Optimizer.step` (backward), or after it."""
    events = read_events(chrome_trace)
    launch_ts = {e["args"]["correlation"]: e["ts"] for e in events
                 if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    backward = min(e["ts"] for e in events
                   if e.get("cat") == "cpu_op" and e["name"].startswith("autograd::engine::evaluate_function"))
    optimizer = min(e["ts"] for e in events
                    if e.get("cat") == "user_annotation" and e["name"].startswith("Optimizer.step"))
    busy = dict.fromkeys(PHASES, 0.0)
    for e in events:
        if e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy"):
            t = launch_ts.get(e["args"].get("correlation"), e["ts"])
            busy["optimizer" if t >= optimizer else "backward" if t >= backward else "forward"] += e["dur"] / 1e3
    return busy


def maya_spans(trace_dir: Path) -> tuple[dict[str, float], dict[str, float]]:
    """(span, busy) ms per phase of the emulated trace's last full iteration on Maya's timeline."""
    import numpy as np

    from maya.hardware.cluster import cluster_for_gpu
    from maya.predict import estimate_and_simulate
    from maya.trace import read_rank_trace

    _, result = estimate_and_simulate({0: read_rank_trace(trace_dir, 0)}, "h200", cluster_for_gpu("h200", 1))
    t = result.timelines[0].to_pandas()  # with the trace's phase per row
    gpu = t["kind"].astype(str).isin(GPU_KINDS).to_numpy() & t["start_us"].notna().to_numpy()
    ended_before = np.concatenate([[0.0], np.fmax.accumulate(np.where(gpu, t["end_us"], 0.0))[:-1]])
    with_forward = sorted(set(t["iteration"][gpu & (t["phase"] == "forward").to_numpy()]))
    last = int(with_forward[-2])  # the next iteration's forward closes this one's optimizer

    def mark(iteration: int, phase: str) -> float:
        first = np.flatnonzero(gpu & (t["iteration"] == iteration).to_numpy() & (t["phase"] == phase).to_numpy())[0]
        return max(float(t["issue_us"].iat[first]), float(ended_before[first]))

    marks = [mark(last, p) for p in PHASES] + [mark(last + 1, "forward")]
    spans = {p: (marks[i + 1] - marks[i]) / 1e3 for i, p in enumerate(PHASES)}
    mine = gpu & (t["iteration"] == last).to_numpy()
    busy = {p: float((t["end_us"] - t["start_us"])[mine & (t["phase"] == p).to_numpy()].sum()) / 1e3 for p in PHASES}
    busy["backward"] += float((t["end_us"] - t["start_us"])[mine & (t["phase"] == "other").to_numpy()].sum()) / 1e3
    return spans, busy


def _shown(path: Path) -> Path:
    """`path` as the command line would name it from the repository root."""
    return path.resolve().relative_to(ROOT) if path.resolve().is_relative_to(ROOT) else path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--probe", type=Path, required=True, help="host_phase_probe.py output directory")
    p.add_argument("--op-times", type=Path, default=OP_TIMES,
                   help="directory of op_time_probe.py's Chrome traces (NAME.trace.json.gz) for the profiled busy "
                        "columns (default: benchmarks/gpu/op_times_h200)")
    p.add_argument("--out", type=Path, help="also write the table here")
    args = p.parse_args()
    files = sorted(args.probe.glob("*.json.gz"))
    if not files:
        sys.exit(f"{args.probe}: no host_phase_probe.py output (*.json.gz)")
    op_times = "" if args.op_times == OP_TIMES else f" --op-times {_shown(args.op_times)}"
    lines = [f"Made by `python benchmarks/phase_spans.py --probe {_shown(args.probe)}{op_times}`"
             " (ms per step; idle = span - busy).", "",
             "| workload | phase | measured span | profiled busy | measured idle | Maya span | Maya busy | Maya idle |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    with tempfile.TemporaryDirectory() as tmp:
        for path in files:
            probe = json.loads(gzip.open(path).read())
            name = probe["workload"]
            measured = measured_spans(probe)
            chrome = args.op_times / f"{name}.trace.json.gz"
            busy = profiled_busy(chrome) if chrome.is_file() else None
            spans, maya_busy = maya_spans(emulated_trace(name, Path(tmp)).parents[1])
            for d in (measured, busy, spans, maya_busy):
                if d is not None:
                    d["step"] = sum(d.values())
            for phase in (*PHASES, "step"):
                m, s, b = measured[phase], spans[phase], maya_busy[phase]
                pb = f"{busy[phase]:.2f} | {m - busy[phase]:.2f}" if busy else "- | -"
                lines.append(f"| {name} | {phase} | {m:.2f} | {pb} | {s:.2f} | {b:.2f} | {s - b:.2f} |")
            print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
