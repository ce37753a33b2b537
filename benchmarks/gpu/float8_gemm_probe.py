"""Float8 GEMMs (`torch._scaled_mm`, per-tensor scales, bfloat16 output) and bfloat16 GEMMs of the
same shapes, timed with CUDA events with the L2 cache flushed before each run (the median of REPS).

The same script gives Maya's estimates: under `maya emulate`, `Event.elapsed_time` answers the
predicted time of the ops between the two records (maya/event_timing.py), here one GEMM.

    python benchmarks/gpu/float8_gemm_probe.py --out float8_gemm_h200.json       # on the GPU
    maya emulate benchmarks/gpu/float8_gemm_probe.py --out float8_gemm_maya.json   # Maya's estimates
    python benchmarks/float8_gemm_check.py float8_gemm_h200.json float8_gemm_maya.json

Shapes are (M, N, K) of `a [M, K] @ b [K, N]`: square ones, a Llama-style layer's projections over
8,192 tokens (forward and the weight gradient, whose K is the tokens) and a few small ones.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

SHAPES = (
    (1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (16384, 16384, 16384),
    (8192, 4096, 4096), (8192, 12288, 4096), (8192, 14336, 4096), (8192, 4096, 14336), (8192, 11008, 4096),
    (16384, 8192, 8192), (4096, 4096, 8192), (14336, 4096, 8192), (4096, 14336, 8192),
    (256, 4096, 4096), (512, 8192, 8192), (2048, 512, 2048), (128, 128, 8192),
)  # fmt: skip
REPS = 10
FLUSH_BYTES = 256 << 20
"""More than the H100's and H200's 50-60 MB of L2: written before each timed run."""


def timed_ms(fn, flush: torch.Tensor, reps: int) -> float:
    fn()  # warm-up: cuBLASLt's algorithm choice for the shape
    times = []
    for _ in range(reps):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--reps", type=int, default=REPS)
    args = p.parse_args()
    flush = torch.empty(FLUSH_BYTES // 4, device="cuda")
    one = torch.tensor(1.0, device="cuda")
    rows, started = [], time.perf_counter()
    for m, n, k in SHAPES:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        a8, w8 = a.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)
        cases = {
            "bfloat16": lambda: torch.mm(a, w.t()),
            "float8": lambda: torch._scaled_mm(a8, w8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
            "float8_fast_accum": lambda: torch._scaled_mm(a8, w8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                                          use_fast_accum=True),
        }
        for kind, fn in cases.items():
            ms = timed_ms(fn, flush, args.reps)
            rows.append({"m": m, "n": n, "k": k, "kind": kind, "median_ms": ms, "tflops": 2 * m * n * k / (ms * 1e9)})
            print(f"{m:6d} {n:6d} {k:6d} {kind:18s} {ms * 1000:10.1f} us {rows[-1]['tflops']:8.1f} TFLOP/s", flush=True)
    env = {
        "gpu_name": torch.cuda.get_device_name(0), "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda, "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "reps": args.reps,
        "seconds": round(time.perf_counter() - started, 1),
    }
    with open(args.out, "w") as f:
        json.dump({"env": env, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
