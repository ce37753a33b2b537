"""Where a pipeline's memory stops growing with the micro-batch count: why the tuner's counts are
(pp + 1, pp + 2) for GPipe and 1F1B and (2 pp, 3 pp) for the interleaved schedule
(maya/tune/accum_extrapolation.py).

Emulates examples/train_gpt.py (8 blocks of width 1,024, 1,024-token sequences, bf16, micro-batch
2) under a schedule at several micro-batch counts and prints every rank's memory parts (up to the
last backward, the tail, the optimizer step; MiB) and the step time, as the tuner caches them.

    python benchmarks/pipeline_warmup_memory.py --json benchmarks/results/pipeline_warmup_memory.json
"""

import argparse
import json
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODEL = ["--steps", "1", "--seq", "1024", "--dim", "1024", "--layers", "8", "--heads", "16", "--vocab", "8192",
         "--precision", "bf16", "--batch", "2"]
CASES = (("1f1b", 2, (2, 3, 4, 12)), ("interleaved", 2, (2, 4, 6, 8, 12)), ("1f1b", 4, (4, 5, 6, 16)))
"""(schedule, stages, micro-batch counts)."""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args()
    from maya.api import emulate
    from maya.tune.evaluate import figures_from_summary

    rows = []
    for schedule, pp, counts in CASES:
        for accum in counts:
            trace_dir = tempfile.mkdtemp(prefix="maya-warmup-")
            argv = [*MODEL, "--pp", str(pp), "--pp-schedule", schedule, "--accum", str(accum)]
            summary = emulate(str(ROOT / "examples" / "train_gpt.py"), argv, gpu="h100", nproc_per_node=pp,
                              trace_dir=trace_dir, in_process=True)
            if summary.exit_code != 0:
                raise SystemExit(summary.error)
            figures = figures_from_summary(summary, trace_dir)
            rows.append({"schedule": schedule, "pp": pp, "accum": accum, "step_time_ms": round(figures["step_time_ms"], 2),
                         "memory_segments_mib": {r: [round(b / 2**20) for b in v] for r, v in figures["memory_segments"].items()}})
            print(json.dumps(rows[-1]), flush=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    if args.json:
        Path(args.json).write_text(json.dumps({
            "command": "python benchmarks/pipeline_warmup_memory.py --json benchmarks/results/pipeline_warmup_memory.json",
            "model": " ".join(MODEL), "commit": commit, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
