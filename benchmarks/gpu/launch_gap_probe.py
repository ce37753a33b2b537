"""Kernels and their launches over three steady training iterations, with no CPU-op recording.

Run from the repository root on a machine with an NVIDIA GPU:
    python3 benchmarks/gpu/launch_gap_probe.py --out DIR gpt2_124m_bf16 hf_bert_bf16 ...

For each named suite workload (benchmarks/validation/suite.py) it runs the script and, from the end of
its optimizer step `--iteration` - 1 to the end of step `--iteration` + 2, records the profiler's CUDA
activity alone (`ProfilerActivity.CUDA`: every kernel, memcpy and memset, and the CUDA runtime call
that launched each, on its host thread, with their correlation ids). No CPU op is recorded and no
synchronisation starts the window (op_time_probe.py's iteration starts on an idle GPU and records CPU
ops). At each step's end a `torch.cuda._sleep` kernel (`spin_kernel`) marks the boundary on the GPU
timeline and among the launches. What it measures well is the GPU's busy time of a steady step
(benchmarks/launch_gaps.py). The CUDA activity still costs the host at every launch: on an H100 lease,
host-bound steps ran up to 1.95x slower than that lease's ground truth, GPU-bound ones 1.00-1.04x
(benchmarks/results/launch_gaps_h100.md), so its idle time and launch gaps are a slowed host's.

It writes DIR/<workload>.trace.json.gz (the Chrome trace) and DIR/<workload>.json (the script's
argv, the GPU, torch, the wall time of the three iterations, and the CUDA-event step times the script
printed). Only torch and the standard library are imported.
"""

import argparse
import contextlib
import io
import json
import runpy
import sys
import time
from pathlib import Path

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).parents[1] / "validation"))
sys.path.insert(0, str(Path(__file__).parent))
import suite  # noqa: E402
from op_time_probe import write_chrome_trace  # noqa: E402

ITERATIONS = 3
MARK_CYCLES = 1000
"""`torch.cuda._sleep` cycles of the step-boundary marker kernel (its length is in each trace)."""


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--iteration", type=int, default=6, help="first profiled iteration (counting from 0)")
    p.add_argument("workloads", nargs="+")
    args = p.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    for name in args.workloads:
        w = next(w for w in suite.WORKLOADS if w.name == name)
        prof = profile(activities=[ProfilerActivity.CUDA])
        state = {"step": 0, "t0": None, "wall_s": None}

        def post(*a):
            state["step"] += 1
            if state["step"] == args.iteration:
                prof.start()
                state["t0"] = time.perf_counter()
            if args.iteration <= state["step"] <= args.iteration + ITERATIONS:
                torch.cuda._sleep(MARK_CYCLES)
            if state["step"] == args.iteration + ITERATIONS:
                torch.cuda.synchronize()
                state["wall_s"] = time.perf_counter() - state["t0"]
                prof.stop()

        hooks = [register_optimizer_step_post_hook(post)]
        sys.argv = [str(suite.WORKLOADS_DIR / w.script), *w.argv, "--steps", "6", "--warmup", "4"]
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                runpy.run_path(sys.argv[0], run_name="__main__")
        finally:
            for h in hooks:
                h.remove()
        result = next((json.loads(line.split(" ", 1)[1]) for line in printed.getvalue().splitlines()
                       if line.startswith("MAYA_RESULT ")), {})
        write_chrome_trace(prof, Path(args.out, f"{name}.trace.json.gz"))
        Path(args.out, f"{name}.json").write_text(json.dumps({
            "workload": name, "argv": sys.argv[1:], "first_iteration": args.iteration, "iterations": ITERATIONS,
            "gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "wall_ms": state["wall_s"] * 1e3 if state["wall_s"] else None, "step_ms": result.get("step_ms"),
        }, indent=1))
        print(f"{name}: {ITERATIONS} iterations in {state['wall_s'] * 1e3:.2f} ms (profiled)", flush=True)


if __name__ == "__main__":
    main()
