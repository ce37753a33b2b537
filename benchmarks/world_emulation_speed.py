"""Multi-rank emulation at scale: a 1,024-rank Llama-70B-class job (128 nodes x 8 GPUs, TP 8, PP 8, DP 16).

The model is examples/train_gpt.py at Llama-70B scale (hidden 8192, 80 layers, 64 heads, sequence
4096, vocabulary 128256: 65B parameters in GPT-2 form), with FSDP over the 16 data-parallel ranks,
1F1B over 8 stages of 10 layers and 16 micro-batches of 1 sequence per step. Rank deduplication
should emulate a handful of ranks (rank 0, one probe per mesh dimension, one representative per
pipeline stage) instead of 1,024.

Run:  .venv/bin/python benchmarks/world_emulation_speed.py [--steps 1] [--json OUT]
Target: under 10 minutes on a 2-core machine. Prints the wall time, the ranks emulated and the
prediction; --json writes them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import maya

SCRIPT = Path(__file__).parents[1] / "examples" / "train_gpt.py"
MODEL = ["--dim", "8192", "--layers", "80", "--heads", "64", "--seq", "4096", "--vocab", "128256"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=1)
    p.add_argument("--micro-batches", type=int, default=16)
    p.add_argument("--json", metavar="OUT", help="write the measured figures here")
    args = p.parse_args()
    script_args = [*MODEL, "--batch", "1", "--accum", str(args.micro_batches), "--steps", str(args.steps),
                   "--tp", "8", "--pp", "8", "--dp", "fsdp", "--pp-schedule", "1f1b"]
    started = time.perf_counter()
    summary = maya.emulate(SCRIPT, script_args, gpu="h100", nnodes=128, nproc_per_node=8, progress=print)
    wall_s = time.perf_counter() - started
    if summary.exit_code != 0:
        raise SystemExit(f"emulation failed:\n{summary.error}")
    figures = {
        "command": f"python benchmarks/world_emulation_speed.py --steps {args.steps} --micro-batches {args.micro_batches}",
        "script_args": script_args,
        "world_size": summary.world_size,
        "emulated_ranks": summary.emulated_ranks,
        "ranks_emulated_including_probes": len(summary.extra.get("emulation_s", {})),
        "rank_classes": len(summary.extra.get("rank_classes", [])),
        "wall_s": round(wall_s, 1),
        "predicted_iteration_ms": [it.time_ms for it in summary.iterations],
        "cpus": os.cpu_count(),
        "machine": platform.processor() or platform.machine(),
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
