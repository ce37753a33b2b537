"""Measure every configuration of the single-GPU study (examples/tune_gpt.py) for real on the local GPU.

The study trains GPT-2 small (examples/train_gpt.py) at a global batch of 64 sequences of 1,024
tokens; its 12 configurations are the micro-batch (16, 32, 64; gradient accumulation makes up the
rest), activation checkpointing (none, non-reentrant) and precision (bf16, fp32). Each runs as its
own process (a fresh CUDA context and caching allocator, as each is emulated afresh) for --steps
optimizer steps. A global optimizer-step hook records a CUDA event at the end of every
`optimizer.step()` (Maya's iteration boundary), so the step time is the interval between two
consecutive step ends, without adding a synchronisation; the median over the steps after --warmup
is recorded, with `torch.cuda.max_memory_allocated()` / `max_memory_reserved()`, the GPU, the driver
and the torch / CUDA / cuDNN versions. A configuration that runs out of memory is recorded as such.

Needs only torch (no ray, catboost or hyperopt). From the repository root on the GPU machine
(about 3 minutes on an H200):

    python benchmarks/tune_quality/measure_h200.py --out benchmarks/tune_quality/measured_h200_step_hooks.json

Then, on any machine with Maya installed:
python benchmarks/tune_quality/compare.py --measured benchmarks/tune_quality/measured_h200_step_hooks.json
"""

import argparse
import datetime
import json
import os
import platform
import runpy
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "examples" / "train_gpt.py"
# measured_h200.json holds the same study measured by benchmarks/gpu/measure_train_gpt.py (train_gpt.py's
# own per-step CUDA events); this script's step boundaries are the optimizer steps, as Maya's are.
DEFAULT_OUT = Path(__file__).resolve().parent / "measured_h200_step_hooks.json"
RESULT_PREFIX = "MAYA_MEASURE "

# examples/tune_gpt.py: fixed flags, global batch, and the searched values (tests check they agree).
MODEL_ARGS = ("--seq", "1024", "--dim", "768", "--layers", "12", "--heads", "12", "--vocab", "50304")
GLOBAL_BATCH = 64
CONFIGS = tuple(
    {"micro_batch": mb, "checkpoint": ckpt, "precision": prec}
    for mb in (16, 32, 64) for ckpt in ("none", "nonreentrant") for prec in ("bf16", "fp32")
)

# NVLink multicast stays off in every child (see the device notes); none of this needs it.
CHILD_ENV_OVERRIDES = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def script_argv(config: dict, steps: int) -> list[str]:
    """train_gpt.py's flags for one configuration."""
    accum = GLOBAL_BATCH // config["micro_batch"]
    return [*MODEL_ARGS, "--steps", str(steps), "--batch", str(config["micro_batch"]), "--accum", str(accum),
            "--checkpoint", config["checkpoint"], "--precision", config["precision"]]


def child(argv: list[str], warmup: int) -> None:
    """Run train_gpt.py in this process with an optimizer-step hook; print one MAYA_MEASURE line."""
    import torch

    ends = []

    def on_step(optimizer, args, kwargs):
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        ends.append(event)

    torch.optim.optimizer.register_optimizer_step_post_hook(on_step)
    sys.argv = [str(SCRIPT), *argv]
    payload: dict = {"oom": False}
    try:
        runpy.run_path(str(SCRIPT), run_name="__main__")
    except torch.OutOfMemoryError as e:
        payload.update(oom=True, error=str(e).splitlines()[0])
    torch.cuda.synchronize()
    step_ms = [a.elapsed_time(b) for a, b in zip(ends, ends[1:])]  # step i: end of step i-1 -> end of step i
    steady = step_ms[warmup - 1:] if len(step_ms) >= warmup else []
    payload.update(
        step_ms=step_ms,
        median_step_ms=statistics.median(steady) if steady else None,
        max_memory_allocated=torch.cuda.max_memory_allocated(),
        max_memory_reserved=torch.cuda.max_memory_reserved(),
    )
    print(RESULT_PREFIX + json.dumps(payload), flush=True)


def environment() -> dict:
    """GPU, driver and library versions of this machine."""
    import torch

    smi = shutil.which("nvidia-smi")
    driver = None
    if smi:
        driver = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True).stdout.strip().splitlines()[:1]
    return {
        "gpu": torch.cuda.get_device_name(0),
        "gpu_memory_bytes": torch.cuda.get_device_properties(0).total_memory,
        "driver": driver[0] if driver else None,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "python": platform.python_version(),
        "host": socket.gethostname(),
    }


def measure(config: dict, steps: int, warmup: int, timeout_s: float) -> dict:
    """Run one configuration in a child process and return its record (ms, bytes)."""
    argv = script_argv(config, steps)
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "--warmup", str(warmup), "--", *argv]
    started = time.perf_counter()
    record = {**config, "accum": GLOBAL_BATCH // config["micro_batch"], "argv": argv, "ok": False}
    try:
        r = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, cwd=REPO_ROOT,
                           env={**os.environ, **CHILD_ENV_OVERRIDES})
    except subprocess.TimeoutExpired:
        return {**record, "timed_out": True, "wall_s": round(time.perf_counter() - started, 1)}
    record.update(returncode=r.returncode, wall_s=round(time.perf_counter() - started, 1))
    lines = [line for line in r.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if lines:
        record.update(json.loads(lines[-1][len(RESULT_PREFIX):]))
        record["ok"] = record["median_step_ms"] is not None and not record["oom"]
    else:
        record["stderr_tail"] = r.stderr[-4000:]
    return record


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(DEFAULT_OUT), help=f"JSON to write (default {DEFAULT_OUT.name})")
    p.add_argument("--steps", type=int, default=12, help="optimizer steps per configuration")
    p.add_argument("--warmup", type=int, default=3, help="steps left out of the median")
    p.add_argument("--timeout", type=float, default=300, help="seconds per configuration")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("argv", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child([a for a in args.argv if a != "--"], args.warmup)
        return
    import torch

    if not torch.cuda.is_available():
        sys.exit("measure_h200.py needs a CUDA GPU")
    out = Path(args.out)
    report = {
        "command": f"python benchmarks/tune_quality/measure_h200.py --steps {args.steps} --warmup {args.warmup}",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "study": "examples/tune_gpt.py",
        "global_batch": GLOBAL_BATCH,
        "steps": args.steps,
        "warmup": args.warmup,
        "environment": environment(),
        "configs": [],
    }
    for config in CONFIGS:
        record = measure(config, args.steps, args.warmup, args.timeout)
        report["configs"].append(record)
        out.write_text(json.dumps(report, indent=2) + "\n")  # an interrupted run keeps what it measured
        shown = f"{record['median_step_ms']:.1f} ms" if record.get("ok") else ("OOM" if record.get("oom") else "failed")
        print(f"{config}: {shown}, peak allocated {record.get('max_memory_allocated', 0) / 2**30:.1f} GiB", flush=True)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
