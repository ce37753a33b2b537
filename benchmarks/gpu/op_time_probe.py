"""Profile one training iteration per workload on a real GPU: GPU time per aten op, GPU busy time,
and the iteration's wall time. The calibration data for Maya's estimates and host model.

Run from the repository root on a machine with an NVIDIA GPU:
    python3 benchmarks/gpu/op_time_probe.py --out DIR [--chrome] gpt2_124m_bf16 llama_150m_bf16 ...
It writes DIR/<workload>.json per named suite workload (benchmarks/validation/suite.py); with
--chrome also DIR/<workload>.trace.json.gz, the profiler's Chrome trace of that iteration (every
kernel with its launching CPU op, for kernels the per-op table cannot attribute to an aten op).
With --shapes the profiler also records input shapes, and the JSON gets `per_op_shape`: GPU time per
aten op and input shapes, for pairing Maya's per-signature estimates (recording shapes adds host time
to the profiled iteration, so its `wall_ms` is not the plain step's).
"""

import argparse
import gzip
import json
import os
import runpy
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).parents[1] / "validation"))
import suite  # noqa: E402


def _gpu_ops(prof, group_by_input_shape: bool = False) -> list:
    """The profiler's aten ops (averaged per op, or per op and input shapes) that ran GPU time."""
    return [e for e in prof.key_averages(group_by_input_shape=group_by_input_shape)
            if e.key.startswith("aten::") and e.self_device_time_total > 0]


def write_chrome_trace(prof, path: Path) -> None:
    """The profiler's Chrome trace, gzipped, at `path`."""
    fd, raw = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    prof.export_chrome_trace(raw)
    with open(raw, "rb") as src, gzip.open(path, "wb") as dst:
        dst.write(src.read())
    os.unlink(raw)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--iteration", type=int, default=5)
    p.add_argument("--chrome", action="store_true", help="also write <workload>.trace.json.gz")
    p.add_argument("--shapes", action="store_true", help="record input shapes; adds per_op_shape to the JSON")
    p.add_argument("workloads", nargs="+")
    args = p.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    for name in args.workloads:
        w = next(w for w in suite.WORKLOADS if w.name == name)
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=args.shapes)
        state = {"step": 0, "t0": None, "wall_s": None}

        def post(*a):
            state["step"] += 1
            if state["step"] == args.iteration:  # iteration `iteration` starts after this step
                torch.cuda.synchronize()
                prof.start()
                state["t0"] = time.perf_counter()
            elif state["step"] == args.iteration + 1:
                torch.cuda.synchronize()
                state["wall_s"] = time.perf_counter() - state["t0"]
                prof.stop()

        hooks = [register_optimizer_step_post_hook(post)]
        sys.argv = [str(suite.WORKLOADS_DIR / w.script), *w.argv, "--steps", "3", "--warmup", "4"]
        try:
            runpy.run_path(sys.argv[0], run_name="__main__")
        finally:
            for h in hooks:
                h.remove()
        # The CUDA-side events also hold gpu_user_annotation ranges (a record_function such as
        # "Optimizer.step#AdamW.step" or "DistributedDataParallel.forward" projected onto the GPU
        # timeline); counting them as kernels added 3-20 ms of phantom busy time per iteration.
        kernels = [e for e in prof.events()
                   if e.device_type == torch.autograd.DeviceType.CUDA and not e.is_user_annotation]
        busy_us = sum(e.device_time for e in kernels)
        per_op = {e.key: {"count": e.count, "self_device_us": e.self_device_time_total} for e in _gpu_ops(prof)}
        per_op_shape = [{"op": e.key, "input_shapes": e.input_shapes, "count": e.count,
                         "self_device_us": e.self_device_time_total}
                        for e in _gpu_ops(prof, group_by_input_shape=True)] if args.shapes else []
        if args.chrome:
            write_chrome_trace(prof, Path(args.out, f"{name}.trace.json.gz"))
        Path(args.out, f"{name}.json").write_text(json.dumps({
            "workload": name, "argv": sys.argv[1:], "iteration": args.iteration, "gpu": torch.cuda.get_device_name(),
            "torch": torch.__version__, "wall_ms": state["wall_s"] * 1e3, "kernel_busy_ms": busy_us / 1e3,
            "kernels": len(kernels), "per_op": per_op, **({"per_op_shape": per_op_shape} if args.shapes else {}),
        }, indent=1))
        print(f"{name}: wall {state['wall_s'] * 1e3:.2f} ms (profiled), GPU busy {busy_us / 1e3:.2f} ms, {len(kernels)} kernels", flush=True)


if __name__ == "__main__":
    main()
