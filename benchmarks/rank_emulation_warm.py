"""Warm versus fresh worker: one rank of a Llama-70B-width world emulated three times in one process.

The first emulation in a process pays for imports and PyTorch's first-use set-up; later ones (what
a reused Ray worker or a tuning trial's process does) do not. The rank is rank 0 of 1,024 H100s,
tp 8, FSDP, 2 blocks of examples/train_gpt.py at width 8,192 (what the tuner emulates for its
depth extrapolation).

    python benchmarks/rank_emulation_warm.py --json benchmarks/results/rank_emulation_warm.json
"""

import argparse
import json
import os
import platform
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARGS = ["--steps", "1", "--seq", "4096", "--dim", "8192", "--layers", "2", "--heads", "64", "--vocab", "128256",
        "--precision", "bf16", "--init-device", "meta", "--dp", "fsdp", "--tp", "8", "--pp", "1", "--batch", "2",
        "--accum", "2", "--checkpoint", "nonreentrant"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args()
    from maya.world.rank_emulation import emulate_rank

    runs = []
    for _ in range(args.runs):
        started = time.perf_counter()
        result = emulate_rank(str(ROOT / "examples" / "train_gpt.py"), ARGS, "h100", 0, 1024, 8)
        if result.exit_code != 0:
            raise SystemExit(result.error)
        runs.append({"wall_s": round(time.perf_counter() - started, 2), "trace_rows": result.table.num_rows})
        print(json.dumps(runs[-1]), flush=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    out = {"command": "python benchmarks/rank_emulation_warm.py --json benchmarks/results/rank_emulation_warm.json",
           "argv": " ".join(ARGS), "runs": runs, "commit": commit, "machine": f"{platform.machine()}, {os.cpu_count()} CPUs"}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
