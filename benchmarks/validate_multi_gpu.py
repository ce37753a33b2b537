"""Maya's predictions for the multi-GPU ground truth: examples/train_gpt.py under DDP, FSDP2, TP and PP.

Reads the measurement made by `benchmarks/gpu/measure_train_gpt.py --study distributed
--nproc-per-node N` on real H200s (benchmarks/gpu/multi_gpu_h200x<N>/train_gpt_h200x<N>.json),
emulates every configuration with `maya.emulate(..., nproc_per_node=N)` (3 steps; the median of the
steps after the first is compared with the measured median after 2 warm-up steps), and writes a
Markdown table of predicted against measured step time and per-rank peak memory.

    python benchmarks/validate_multi_gpu.py --measured benchmarks/gpu/multi_gpu_h200x2/train_gpt_h200x2.json \\
        --out benchmarks/validation/results_multi_gpu_h200.md
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import tempfile
from pathlib import Path

import maya

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "examples" / "train_gpt.py"


def script_argv(command: str) -> list[str]:
    """The train_gpt.py flags of a recorded command, without --steps."""
    words = shlex.split(command)
    argv = words[words.index(str(SCRIPT)) + 1:] if str(SCRIPT) in words else words[[w.endswith("train_gpt.py") for w in words].index(True) + 1:]
    i = argv.index("--steps")
    return argv[:i] + argv[i + 2:]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--measured", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--steps", type=int, default=3)
    args = p.parse_args()
    measured = json.loads(args.measured.read_text())
    gpus = measured["gpus"]
    rows, time_errors, memory_errors = [], [], []
    for config in measured["configurations"]:
        if config.get("status") != "ok":
            continue
        argv = [*script_argv(config["command"]), "--steps", str(args.steps)]
        with tempfile.TemporaryDirectory() as trace_dir:
            summary = maya.emulate(SCRIPT, argv, gpu="h200", nnodes=1, nproc_per_node=gpus, trace_dir=trace_dir)
        if summary.exit_code != 0:
            last = (summary.error or "").strip().splitlines()[-1:] or ["?"]
            rows.append(f"| {config['name']} | emulation failed: {last[0][:120]} | | | | |")
            continue
        predicted_ms = statistics.median(it.time_ms for it in summary.iterations[1:])
        time_error = predicted_ms / config["median_step_ms"] - 1
        time_errors.append(abs(time_error))
        rep = summary.extra.get("peak_allocated_bytes_per_representative", {})
        classes = summary.extra.get("rank_classes", [])
        mem_cells = []
        for rank, measured_mib in config["peak_allocated_mib_per_rank"].items():
            representative = next(
                (c["representative"] for c in classes if _in_ranges(int(rank), c["members"])), int(rank)
            )
            predicted_mib = rep.get(str(representative), 0) / 2**20
            error = predicted_mib / measured_mib - 1
            memory_errors.append(abs(error))
            mem_cells.append(f"r{rank}: {predicted_mib:,.0f} / {measured_mib:,.0f} ({error:+.1%})")
        rows.append(
            f"| {config['name']} | {predicted_ms:.2f} | {config['median_step_ms']:.2f} | {time_error:+.1%} | "
            f"{'; '.join(mem_cells)} | {len(summary.emulated_ranks)} |"
        )
    table = [
        f"# Multi-GPU validation: {gpus} x {measured['gpu']} (torch {measured['torch']}, CUDA {measured['cuda']})",
        "",
        f"Measured: `{measured['command']}` on {measured['date']}. Predicted: "
        f"`python benchmarks/validate_multi_gpu.py --measured {args.measured} --out {args.out}`.",
        "Peak memory is `torch.cuda.max_memory_allocated()` over the whole run (MiB), predicted / measured.",
        "",
        "| configuration | predicted ms | measured ms | time error | peak memory per rank, predicted / measured MiB | ranks emulated |",
        "| --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
        (f"Median |error|: step time {statistics.median(time_errors):.1%} over {len(time_errors)} configurations, "
         f"peak memory {statistics.median(memory_errors):.1%} over {len(memory_errors)} rank measurements."
         if time_errors else "No configuration could be emulated."),
    ]
    args.out.write_text("\n".join(table) + "\n")
    print("\n".join(table))


def _in_ranges(rank: int, ranges: str) -> bool:
    for part in ranges.split(","):
        lo, _, hi = part.partition("-")
        if int(lo) <= rank <= int(hi or lo):
            return True
    return False


if __name__ == "__main__":
    main()
