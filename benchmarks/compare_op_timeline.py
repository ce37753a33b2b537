"""Compare the emulator's ops and memory for one iteration with a real GPU's (op_timeline_probe.py).

    python benchmarks/compare_op_timeline.py gpt2_124m_bf16 [--timelines benchmarks/gpu/op_timelines_h200]
Prints the op counts that differ (GPU minus emulated) and both peaks of memory_allocated.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "validation"))


def _gpu_name(op: str) -> str:
    # "aten._to_copy.default" -> "aten::_to_copy"; "aten.add.Tensor" -> "aten::add.Tensor"
    ns, name, overload = op.split(".", 2) if op.count(".") >= 2 else (*op.split(".", 1), "default")
    return f"{ns}::{name}" if overload == "default" else f"{ns}::{name}.{overload}"


def main() -> None:
    import suite
    import torch

    import maya.api
    from maya.emulator.recorder import _launches_nothing
    from maya.emulator.recorder import _op_name as op_name
    from maya.trace import read_rank_trace

    p = argparse.ArgumentParser()
    p.add_argument("workload")
    p.add_argument("--timelines", default=str(ROOT / "benchmarks" / "gpu" / "op_timelines_h200"))
    args = p.parse_args()
    real = json.loads(Path(args.timelines, f"{args.workload}.json").read_text())
    w = next(w for w in suite.WORKLOADS if w.name == args.workload)
    trace_dir = tempfile.mkdtemp(prefix="maya-compare-")
    summary = maya.api.emulate(suite.WORKLOADS_DIR / w.script, real["argv"], trace_dir=trace_dir)
    if summary.exit_code:
        raise SystemExit(summary.error)
    table = read_rank_trace(trace_dir, 0).to_pandas()
    ours = table[(table.iteration == real["iteration"]) & table.kind.isin(["kernel", "memcpy"])]

    def launches(op: str) -> bool:
        ns, name, overload = op.split(".", 2) if op.count(".") >= 2 else (*op.split(".", 1), "default")
        try:
            func = getattr(getattr(getattr(torch.ops, ns), name), overload)
        except AttributeError:
            return True
        return not _launches_nothing(func) and op_name(func) not in ("aten::empty.memory_format", "aten::empty_strided")

    gpu_ops = collections.Counter(_gpu_name(r["op"]) for r in real["rows"] if launches(r["op"]))
    emu_ops = collections.Counter(ours.op)
    diff = {op: gpu_ops[op] - emu_ops[op] for op in set(gpu_ops) | set(emu_ops) if gpu_ops[op] != emu_ops[op]}
    print(f"{args.workload}: {sum(gpu_ops.values())} GPU ops on the H200, {len(ours)} emulated")
    for op, n in sorted(diff.items(), key=lambda kv: -abs(kv[1])):
        print(f"  {n:+5d}  {op}  (gpu {gpu_ops[op]}, emulated {emu_ops[op]})")
    it = next(i for i in summary.iterations if i.index == real["iteration"])
    real_peak = max(r["allocated"] for r in real["rows"])
    print(f"  peak allocated: gpu {real_peak / 2**30:.3f} GiB, emulated {it.peak_allocated_bytes / 2**30:.3f} GiB "
          f"({(it.peak_allocated_bytes - real_peak) / real_peak:+.1%})")


if __name__ == "__main__":
    main()
