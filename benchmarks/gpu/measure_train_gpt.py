"""Measure examples/train_gpt.py configurations on the local GPU: real step time and peak memory.

Each configuration runs as its own process (fresh CUDA context and caching allocator):
`python examples/train_gpt.py --steps N <flags>`. The script prints, on rank 0, one line per step
with its CUDA-event step time and `torch.cuda.max_memory_allocated()`; the median over the steps after
`--skip` warm-up steps is recorded. A configuration that runs out of memory is recorded as "oom".
Only the standard library is imported here (the GPU machine has torch but no Maya dependencies).

The single-GPU tune study of examples/tune_gpt.py (global batch 64 x 1,024 tokens; micro-batch,
checkpointing, precision), on the GPU machine from the repository root:

    python benchmarks/gpu/measure_train_gpt.py --study tune_gpt --out benchmarks/tune_quality/measured_h200.json

The `compile` study: GPT-2 small eager and under torch.compile (`--compile`), micro-batches 8 and 16.
"""

import argparse
import itertools
import json
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "examples" / "train_gpt.py"
STEP_LINE = re.compile(r"^step (\d+) .* ([0-9.]+) ms peak ([0-9.]+) MiB$")  # rank 0's line per step
ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}

MODEL = ["--seq", "1024", "--dim", "768", "--layers", "12", "--heads", "12", "--vocab", "50304"]
GLOBAL_BATCH = 64


def tune_gpt_study() -> list[dict]:
    """examples/tune_gpt.py's grid: micro-batch x checkpointing x precision at a global batch of 64."""
    configs = []
    for micro_batch, checkpoint, precision in itertools.product([16, 32, 64], ["none", "nonreentrant"], ["bf16", "fp32"]):
        configs.append({
            "micro_batch": micro_batch, "checkpoint": checkpoint, "precision": precision,
            "argv": [*MODEL, "--batch", str(micro_batch), "--accum", str(GLOBAL_BATCH // micro_batch),
                     "--checkpoint", checkpoint, "--precision", precision],
        })
    return configs


def distributed_study() -> list[dict]:
    """train_gpt.py (GPT-2 small) under each parallelism that 2 GPUs allow, 8 x 1,024 tokens per rank."""
    base = [*MODEL, "--batch", "8", "--precision", "bf16"]
    return [
        {"name": "ddp", "argv": [*base, "--dp", "ddp"]},
        {"name": "fsdp", "argv": [*base, "--dp", "fsdp"]},
        {"name": "tp2_fsdp", "argv": [*base, "--tp", "2", "--dp", "fsdp"]},
        {"name": "pp2_1f1b", "argv": [*base, "--pp", "2", "--accum", "4", "--pp-schedule", "1f1b"]},
        {"name": "pp2_gpipe", "argv": [*base, "--pp", "2", "--accum", "4", "--pp-schedule", "gpipe"]},
    ]


def compile_study() -> list[dict]:
    """GPT-2 small in bf16 at micro-batches of 8 and 16, eager and under torch.compile: how much faster
    the compiled step is than the eager one Maya predicts (it runs torch.compile eagerly)."""
    configs = []
    for batch, compiled in itertools.product([8, 16], [False, True]):
        argv = [*MODEL, "--batch", str(batch), "--precision", "bf16", *(["--compile"] if compiled else [])]
        configs.append({"name": f"b{batch}_{'compiled' if compiled else 'eager'}", "argv": argv})
    return configs


STUDIES = {"tune_gpt": tune_gpt_study, "distributed": distributed_study, "compile": compile_study}
PEAK_LINE = re.compile(r"rank (\d+) peak ([0-9.]+) MiB")


def measure(argv: list[str], steps: int, skip: int, timeout_s: float, nproc: int = 1) -> dict:
    import os

    launcher = [sys.executable] if nproc == 1 else [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc)]
    command = [*launcher, str(SCRIPT), "--steps", str(steps), *argv]
    started = time.perf_counter()
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, cwd=REPO_ROOT,
                              env={**os.environ, **ENV})
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "command": " ".join(command[1:])}
    wall_s = time.perf_counter() - started
    steps_seen = [STEP_LINE.match(line.strip()) for line in proc.stdout.splitlines()]
    steps_seen = [m for m in steps_seen if m]
    record = {"command": "python " + " ".join(str(c) for c in command[1:]), "returncode": proc.returncode,
              "wall_s": round(wall_s, 1)}
    if proc.returncode != 0:
        oom = "OutOfMemoryError" in proc.stderr or "out of memory" in proc.stderr
        return {**record, "status": "oom" if oom else "failed", "stderr_tail": proc.stderr[-2000:]}
    step_ms = [float(m.group(2)) for m in steps_seen]
    peaks = {int(m.group(1)): float(m.group(2)) for m in PEAK_LINE.finditer(proc.stdout)}
    return {**record, "status": "ok", "step_ms": step_ms, "median_step_ms": statistics.median(step_ms[skip:]),
            "peak_allocated_mib": float(steps_seen[-1].group(3)),
            "peak_allocated_mib_per_rank": {str(r): v for r, v in sorted(peaks.items())}}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--study", choices=sorted(STUDIES), required=True)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--skip", type=int, default=2, help="warm-up steps left out of the median")
    p.add_argument("--timeout-s", type=float, default=240.0)
    p.add_argument("--nproc-per-node", type=int, default=1, help="GPUs: > 1 launches with torchrun")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    import torch  # only for the versions recorded with the measurement

    out = {
        "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
        "host": platform.node(), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "command": "python benchmarks/gpu/measure_train_gpt.py " + " ".join(sys.argv[1:]),
        "study": args.study, "gpus": args.nproc_per_node, "configurations": [],
    }
    for config in STUDIES[args.study]():
        result = measure(config["argv"], args.steps, args.skip, args.timeout_s, args.nproc_per_node)
        out["configurations"].append({**{k: v for k, v in config.items() if k != "argv"}, **result})
        print(json.dumps(out["configurations"][-1])[:300], flush=True)
        Path(args.out).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
