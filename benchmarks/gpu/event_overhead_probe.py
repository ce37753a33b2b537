"""What a profile's CUDA-event timing adds to a kernel's own time, on the GPU (checks the event
overhead that benchmarks/calibrate.py fits).

`maya profile` times one launch between two CUDA events, after an L2 flush (and, for short ops, a
`torch.cuda._sleep` so that the launch is queued before the GPU reaches it): maya.estimator.profiler's
own `_Timer`, used here unchanged. The same op's kernel time is then read from torch.profiler (CUPTI
kernel records, what benchmarks/gpu/op_time_probe.py reports for training steps), each launch after
an L2 flush as well. The overhead is the difference of the medians, per op:
elementwise `x.mul_(1.0001)` over sizes from 1 Ki to 16 Mi elements, and bf16 GEMMs from 64^3 to 4096^3.

    python benchmarks/gpu/event_overhead_probe.py --out event_overhead_h200.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch

from maya.estimator.profiler import SLEEP_BEFORE_CYCLES, _Timer

REPS = 50
ELEMENTS = (1 << 10, 1 << 14, 1 << 18, 1 << 20, 1 << 22, 1 << 24)
GEMM_SIZES = (64, 256, 1024, 2048, 4096)


def event_us(timer: _Timer, fn, sleep_before: bool) -> float:
    for _ in range(5):
        fn()
    return statistics.median(timer.time_us(fn, REPS, SLEEP_BEFORE_CYCLES if sleep_before else 0))


def kernel_us(timer: _Timer, fn, trace_path: str) -> float:
    """Mean kernel time per launch (CUPTI kernel records of a Chrome trace, the flush's fill kernels
    left out), each launch after an L2 flush."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(REPS):
            timer.flush_buffer.zero_()
            fn()
        torch.cuda.synchronize()
    prof.export_chrome_trace(trace_path)
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel" and "FillFunctor" not in e.get("name", "")]
    return sum(e["dur"] for e in kernels) / REPS


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    args = p.parse_args()
    timer = _Timer(torch.device("cuda"))
    rows = []
    cases = [(f"mul_ {n}", (lambda x: (lambda: x.mul_(1.0001)))(torch.ones(n, device="cuda"))) for n in ELEMENTS]
    for s in GEMM_SIZES:
        a, b = (torch.randn(s, s, device="cuda", dtype=torch.bfloat16) for _ in range(2))
        cases.append((f"mm bf16 {s}^3", (lambda a, b: (lambda: torch.mm(a, b)))(a, b)))
    for name, fn in cases:
        row = {"op": name, "kernel_us": kernel_us(timer, fn, args.out + ".trace.tmp.json")}
        for sleep_before in (True, False):
            row[f"event_us_sleep_{sleep_before}".lower()] = event_us(timer, fn, sleep_before)
        row["overhead_us_sleep_true"] = row["event_us_sleep_true"] - row["kernel_us"]
        row["overhead_us_sleep_false"] = row["event_us_sleep_false"] - row["kernel_us"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    result = {
        "command": "python benchmarks/gpu/event_overhead_probe.py --out event_overhead_h200.json",
        "gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.gmtime()), "reps": REPS, "rows": rows,
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    os.remove(args.out + ".trace.tmp.json")


if __name__ == "__main__":
    main()
