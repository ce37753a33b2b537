"""Measure the validation suite on the local GPU: the ground truth that Maya's predictions are scored on.

Each suite entry (suite.py) runs as its own process, `sys.executable script argv`, so that every
workload starts with a fresh CUDA context and caching allocator. The script's last `MAYA_RESULT
{json}` line gives its per-step times (ms, from CUDA events) and peak memory (bytes); this driver
adds the return code, wall time and, on failure, the tail of stderr. A failing or timed-out workload
is recorded and the run goes on. The output JSON is rewritten after every workload, so an
interrupted run keeps what it measured; a run stopped by SIGTERM (`timeout`) stops the workload
running, then still records the environment, with `stopped_by`, and exits non-zero. Only the
standard library and torch are imported.

Launch on the GPU machine, from the repository root (about 5 minutes on an H200):

    python benchmarks/validation/measure_ground_truth.py --out benchmarks/validation/ground_truth_h200.json

A subset:

    python benchmarks/validation/measure_ground_truth.py --only gpt2_124m_bf16 mlp_tiny_adamw --out /tmp/gt.json
"""

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from suite import WORKLOADS, Workload

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = Path(__file__).resolve().parent / "ground_truth_h200.json"
RESULT_PREFIX = "MAYA_RESULT "
RESULT_KEYS = ("step_ms", "median_step_ms", "max_memory_allocated", "max_memory_reserved")
STDERR_TAIL_CHARS = 4000

# NVLink multicast stays off in every child: on shared hosts a program that uses it can take the
# GPUs out of service (see the device notes). None of these workloads needs it.
CHILD_ENV_OVERRIDES = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}


def parse_maya_result(output: str) -> dict | None:
    """The payload of the last `MAYA_RESULT {json}` line in a script's stdout.

    Returns None if there is no such line, its JSON does not parse, or a key of RESULT_KEYS is missing.
    """
    for line in reversed(output.splitlines()):
        if not line.startswith(RESULT_PREFIX):
            continue
        try:
            payload = json.loads(line[len(RESULT_PREFIX):])
        except json.JSONDecodeError:
            return None
        if not isinstance(payload, dict) or any(key not in payload for key in RESULT_KEYS):
            return None
        return payload
    return None


def run_workload(workload: Workload, timeout_s: float) -> dict:
    """Run one suite entry as a subprocess and return its ground-truth record (times in ms, sizes in bytes)."""
    command = [sys.executable, str(workload.script_path), *workload.argv]
    env = {**os.environ, **CHILD_ENV_OVERRIDES}
    record = {
        "name": workload.name,
        "script": str(workload.script_path.relative_to(REPO_ROOT)) if workload.script_path.is_relative_to(REPO_ROOT)
        else str(workload.script_path),
        "argv": list(workload.argv),
        "held_out": workload.held_out,
        "ok": False,
        "returncode": None,
        "timed_out": False,
        "wall_s": None,
        "median_step_ms": None,
        "step_ms": None,
        "max_memory_allocated": None,
        "max_memory_reserved": None,
        "error": None,
        "stderr_tail": None,
    }
    start_s = time.monotonic()
    try:
        proc = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        record["wall_s"] = round(time.monotonic() - start_s, 3)
        record["timed_out"] = True
        record["error"] = f"timed out after {timeout_s:g} s"
        stderr = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        record["stderr_tail"] = stderr[-STDERR_TAIL_CHARS:]
        return record
    record["wall_s"] = round(time.monotonic() - start_s, 3)
    record["returncode"] = proc.returncode
    result = parse_maya_result(proc.stdout)
    if proc.returncode == 0 and result is not None:
        record["ok"] = True
        for key in RESULT_KEYS:
            record[key] = result[key]
        return record
    record["error"] = f"exit code {proc.returncode}" if proc.returncode != 0 else "no MAYA_RESULT line in stdout"
    record["stderr_tail"] = (proc.stderr[-STDERR_TAIL_CHARS:] + "\n--- stdout tail ---\n" + proc.stdout[-1000:])
    return record


def describe_environment() -> dict:
    """The GPU, driver and software versions that the measurements were taken with."""
    import torch

    env = {
        "hostname": socket.gethostname(),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": [sys.executable, *sys.argv],
        "python_version": platform.python_version(),
        "torch_version": torch.__version__,
        "torch_cuda_version": torch.version.cuda,
        "cudnn_version": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "transformers_version": None,
        "gpu_name": None,
        "gpu_total_memory_bytes": None,
        "gpu_count": 0,
        "driver_version": None,
        "alloc_conf": os.environ.get("PYTORCH_ALLOC_CONF") or os.environ.get("PYTORCH_CUDA_ALLOC_CONF") or "",
    }
    try:
        env["transformers_version"] = importlib.metadata.version("transformers")
    except importlib.metadata.PackageNotFoundError:
        pass
    if torch.cuda.is_available():
        env["gpu_count"] = torch.cuda.device_count()
        env["gpu_name"] = torch.cuda.get_device_name(0)
        env["gpu_total_memory_bytes"] = torch.cuda.get_device_properties(0).total_memory
    if shutil.which("nvidia-smi"):
        smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        if smi.returncode == 0 and smi.stdout.strip():
            env["driver_version"] = smi.stdout.strip().splitlines()[0]
    return env


def write_json(path: Path, payload: dict) -> None:
    """Write atomically: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2) + "\n")
    tmp.replace(path)


def format_table(records: list[dict]) -> str:
    lines = [f"{'workload':<32} {'held':>4} {'median ms':>10} {'alloc GiB':>10} {'resv GiB':>9} {'wall s':>7}  status"]
    for r in records:
        gib = 1024**3
        median = f"{r['median_step_ms']:.2f}" if r["ok"] else "-"
        alloc = f"{r['max_memory_allocated'] / gib:.2f}" if r["ok"] else "-"
        resv = f"{r['max_memory_reserved'] / gib:.2f}" if r["ok"] else "-"
        wall = f"{r['wall_s']:.1f}" if r["wall_s"] is not None else "-"
        lines.append(f"{r['name']:<32} {'yes' if r['held_out'] else '':>4} {median:>10} {alloc:>10} {resv:>9} "
                     f"{wall:>7}  {'ok' if r['ok'] else r['error']}")
    return "\n".join(lines)


class Stopped(Exception):
    """The run received SIGTERM: raised in the main thread, where `subprocess.run` kills the running
    workload before passing it on."""


def _raise_stopped(signum, frame) -> None:
    raise Stopped(signal.Signals(signum).name)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", nargs="+", metavar="NAME", help="run only these suite entries")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output JSON file")
    p.add_argument("--timeout-s", type=float, default=120.0, help="wall-clock limit per workload (s)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    workloads = list(WORKLOADS)
    if args.only:
        unknown = sorted(set(args.only) - {w.name for w in workloads})
        if unknown:
            raise SystemExit(f"unknown workload(s): {', '.join(unknown)}; known: {', '.join(w.name for w in workloads)}")
        workloads = [w for w in workloads if w.name in args.only]

    payload = {"environment": None, "workloads": []}
    suite_start_s = time.monotonic()
    stopped_by = None
    previous = signal.signal(signal.SIGTERM, _raise_stopped)
    try:
        for i, workload in enumerate(workloads):
            print(f"[{i + 1}/{len(workloads)}] {workload.name}: {workload.script} {' '.join(workload.argv)}", flush=True)
            record = run_workload(workload, args.timeout_s)
            status = f"{record['median_step_ms']:.2f} ms/step" if record["ok"] else f"FAILED ({record['error']})"
            print(f"    {status}, {record['wall_s']:.1f} s wall", flush=True)
            payload["workloads"].append(record)
            write_json(args.out, payload)
    except Stopped as e:
        stopped_by = str(e)
        print(f"\nstopped by {stopped_by} after {len(payload['workloads'])} of {len(workloads)} workloads", flush=True)
    finally:
        signal.signal(signal.SIGTERM, previous)
    # Query the GPU only after the workloads, so that this process's CUDA context never shares the GPU with them.
    payload["environment"] = describe_environment()
    payload["environment"]["suite_wall_s"] = round(time.monotonic() - suite_start_s, 1)
    if stopped_by:
        payload["environment"]["stopped_by"] = stopped_by
    write_json(args.out, payload)
    if stopped_by:
        return 128 + signal.SIGTERM

    print()
    print(format_table(payload["workloads"]))
    n_failed = sum(not r["ok"] for r in payload["workloads"])
    print(f"\n{len(workloads) - n_failed}/{len(workloads)} ok, {payload['environment']['suite_wall_s']:.0f} s, "
          f"on {payload['environment']['gpu_name']}; wrote {args.out}")
    return 1 if n_failed else 0


if __name__ == "__main__":
    sys.exit(main())
