"""The MoE workload's step time with data-dependent expert sizes against fixed ones, step by step.

Reads the output of `benchmarks/gpu/moe_fixed_shapes_probe.py` (a GPU run) and prints, for each mode,
the median step time over windows of the measured steps, and for the data-dependent runs how many of
each step's expert sizes the process had not met before (cuBLAS chooses a GEMM kernel per shape and
keeps its choice: a size met before costs the host less), and the new-shape figures of
`benchmarks/gpu/new_shape_host_probe.py` when its output is beside the probe's:

    python benchmarks/moe_shape_transient.py benchmarks/gpu/session34/s34

It also prints the host time of the forward's linear layers in the committed profile of the
workload's 6th step, by role (without an argument, only that).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from kernel_attribution import cpu_op_stacks, read_events  # noqa: E402

TRACE = ROOT / "benchmarks" / "gpu" / "op_times_h200" / "moe_top2_bf16.trace.json.gz"
"""The profiler's Chrome trace of the MoE workload's 6th step on an H200 (`op_times_h200/COMMANDS.md`)."""

WINDOW = 12
"""Measured steps per window (the validation ground truth's 12 steps after 4 warm-up steps is the first)."""


def windows(step_ms: list[float], size: int = WINDOW) -> list[float]:
    return [statistics.median(step_ms[i:i + size]) for i in range(0, len(step_ms) - size + 1, size)]


def new_sizes_per_step(sizes: list[int], per_step: int) -> list[int]:
    """How many of each step's sizes were not met in an earlier step or earlier in the same step."""
    seen: set[int] = set()
    out = []
    for i in range(0, len(sizes), per_step):
        fresh = set(sizes[i:i + per_step]) - seen
        out.append(len(fresh))
        seen |= fresh
    return out


def profiled_linears(trace: Path = TRACE, layers: int = 8, experts: int = 8) -> str:
    """Host (CPU) microseconds of the forward's `aten::linear` calls in the profiled step, by role: in each
    layer the attention's qkv and output projections, the router, then per expert w1, w3 (the same shape
    as w1, just run) and w2. Profiled times: the profiler adds some microseconds to every op."""
    linears = [e["dur"] for e, stack, backward in cpu_op_stacks(read_events(trace))
               if e["name"] == "aten::linear" and not stack and not backward]
    per_layer = 3 + 3 * experts
    roles: dict[str, list[float]] = {}
    for i, dur in enumerate(linears[:layers * per_layer]):
        j = i % per_layer
        role = ("qkv", "out", "router")[j] if j < 3 else ("w1", "w3", "w2")[(j - 3) % 3]
        roles.setdefault(role, []).append(dur)
    lines = [f"profiled step ({trace.relative_to(ROOT)}): forward aten::linear host us by role"]
    for role, durs in roles.items():
        durs = sorted(durs)
        lines.append(f"  {role:6s} {len(durs):3d} calls: median {statistics.median(durs):6.1f}, over 200 us: "
                     f"{sum(d > 200 for d in durs):2d}, deciles " + " ".join(f"{durs[int(q * (len(durs) - 1))]:.0f}"
                                                                          for q in (0.1, 0.3, 0.5, 0.7, 0.9)))
    return "\n".join(lines)


def report(directory: Path, warmup: int = 4) -> str:
    probe = json.loads((directory / "moe_fixed_shapes.json").read_text())
    lines = [f"{probe['gpu_name']}, torch {probe['torch_version']}, CUDA {probe['cuda_version']}, {probe['date']}",
             f"median step ms over windows of {WINDOW} measured steps (after {warmup} warm-up steps):"]
    for run in probe["runs"]:
        if "error" in run:
            lines.append(f"  {run['mode']:8s} failed: {run['error'][-300:]}")
            continue
        med = windows(run["step_ms"])
        lines.append(f"  {run['mode']:8s} " + "  ".join(f"{m:7.2f}" for m in med)
                     + f"   (all {len(run['step_ms'])}: {statistics.median(run['step_ms']):.2f})")
        sizes = run.get("expert_sizes")
        if sizes:
            steps = warmup + len(run["step_ms"])
            per_step = len(sizes) // steps
            fresh = new_sizes_per_step(sizes, per_step)
            lines.append(f"           expert sizes: {per_step} per step, {min(sizes)}-{max(sizes)} "
                         f"(mean {statistics.mean(sizes):.1f}, sd {statistics.pstdev(sizes):.1f}), "
                         f"{len(set(sizes))} distinct; new per step: first {fresh[:6]}, "
                         f"steps {warmup}-{warmup + WINDOW - 1}: {sum(fresh[warmup:warmup + WINDOW]) / WINDOW:.1f}, "
                         f"last {WINDOW}: {sum(fresh[-WINDOW:]) / WINDOW:.1f}")
    shapes = directory / "new_shape_host.json"
    if shapes.exists():
        data = json.loads(shapes.read_text())
        lines.append(f"host us per call (aten_op_us {data['aten_op_us']:.2f}): repeat / new / revisit")
        for dtype in ("bfloat16", "float32"):
            for case, row in data[dtype].items():
                lines.append(f"  {dtype:8s} {case:9s} {row['repeat_us']:7.1f} {row['new_us']:7.1f} {row['revisit_us']:7.1f}"
                             f"   first band {row['first_band_us']:7.1f}")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("directory", type=Path, nargs="?", help="the probe's output folder (without it: the profiled step only)")
    p.add_argument("--out", type=Path, help="also write the report here")
    args = p.parse_args()
    text = profiled_linears() + ("\n" + report(args.directory) if args.directory else "")
    print(text)
    if args.out:
        args.out.write_text(f"Made by `python benchmarks/moe_shape_transient.py {args.directory or ''}`\n\n```\n{text}\n```\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
