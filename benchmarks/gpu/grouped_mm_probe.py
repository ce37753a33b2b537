"""Grouped GEMMs (`torch._grouped_mm`, as Hugging Face transformers 5 runs MoE experts) against the
batched GEMM Maya estimates them as (maya/estimator/grouped_gemm.py), timed on the GPU.

For each shape of a grid of MoE layers (tokens x top-k rows routed to G experts in equal groups,
hidden K, expert width N, bf16), three grouped calls as a training step makes them, each next to the
`torch.bmm` of its equal groups: the forward ([T, K] x [G, K, N], the weight stored [G, N, K] as
nn.Linear keeps it), the input gradient ([T, N] x [G, N, K]) and the weight gradient ([K, T] x
[T, N] -> [G, K, N]). Each is timed with CUDA events around REPS calls queued behind a GPU sleep
(the GPU's time, not the host's), median of ROUNDS rounds. Only torch is imported.

    python3 benchmarks/gpu/grouped_mm_probe.py --out grouped_mm_h200.json

`--device cpu` runs the same loops on the host (wall time), which the tests use.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

GRID = [
    # (rows routed = tokens x top-k, experts G, hidden K, expert width N)
    (4096, 8, 1024, 2816), (16384, 8, 1024, 2816), (16384, 8, 4096, 14336), (65536, 8, 4096, 14336),
    (8192, 64, 2048, 1408), (32768, 64, 2048, 1408), (16384, 16, 2048, 5632), (4096, 128, 2048, 768),
]
REPS = 10
ROUNDS = 5


def calls(rows: int, groups: int, hidden: int, width: int, device: str, dtype: torch.dtype) -> list:
    """(name, grouped call, bmm call) of the forward, input gradient and weight gradient of one layer."""
    per = rows // groups
    offs = torch.arange(per, rows + 1, per, device=device, dtype=torch.int32)
    x = torch.randn(rows, hidden, device=device, dtype=dtype)
    w = torch.randn(groups, width, hidden, device=device, dtype=dtype).transpose(1, 2)  # [G, K, N], as nn.Linear
    dy = torch.randn(rows, width, device=device, dtype=dtype)
    w_t = w.transpose(1, 2)  # [G, N, K]
    return [
        ("forward", lambda: torch._grouped_mm(x, w, offs), lambda: torch.bmm(x.view(groups, per, hidden), w)),
        ("input_grad", lambda: torch._grouped_mm(dy, w_t, offs), lambda: torch.bmm(dy.view(groups, per, width), w_t)),
        ("weight_grad", lambda: torch._grouped_mm(x.t(), dy, offs),
         lambda: torch.bmm(x.view(groups, per, hidden).transpose(1, 2), dy.view(groups, per, width))),
    ]


def timed_us(fn, device: str, reps: int, rounds: int) -> float:
    """Median over `rounds` of the mean time of `reps` queued calls, microseconds."""
    fn()  # warm-up: cuBLAS/CUTLASS heuristics, lazy module loading
    times = []
    for _ in range(rounds):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            torch.cuda._sleep(20_000_000)
            start.record()
            for _ in range(reps):
                fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) * 1000.0 / reps)
        else:
            t = time.perf_counter()
            for _ in range(reps):
                fn()
            times.append((time.perf_counter() - t) * 1e6 / reps)
    return statistics.median(times)


def summary(path: str) -> str:
    """The grouped / bmm time ratios of a probe's output: their range and median, and the ratio of
    the summed times (what a step of such GEMMs would see)."""
    with open(path) as f:
        rows = json.load(f)["rows"]
    ratios = [r["grouped_over_bmm"] for r in rows]
    summed = sum(r["grouped_us"] for r in rows) / sum(r["bmm_us"] for r in rows)
    return (f"{len(rows)} calls: grouped / bmm {min(ratios):.2f}-{max(ratios):.2f}, median "
            f"{statistics.median(ratios):.2f}; summed times {summed:.2f}")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--summarize", metavar="JSON", help="print the ratios of an earlier run's output, and stop")
    p.add_argument("--out")
    p.add_argument("--device", default="cuda")
    p.add_argument("--reps", type=int, default=REPS)
    p.add_argument("--rounds", type=int, default=ROUNDS)
    p.add_argument("--grid", default=None, help="rows,groups,hidden,width;... instead of GRID")
    args = p.parse_args(argv)
    if args.summarize:
        print(summary(args.summarize))
        return
    if not args.out:
        p.error("--out is required (or --summarize)")
    grid = GRID if args.grid is None else [tuple(int(v) for v in item.split(",")) for item in args.grid.split(";")]
    env = {"device": args.device, "torch": torch.__version__, "cuda": torch.version.cuda,
           "gpu": torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu",
           "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "reps": args.reps, "rounds": args.rounds}
    rows = []
    for shape in grid:
        for name, grouped, bmm in calls(*shape, args.device, torch.bfloat16):
            g_us, b_us = timed_us(grouped, args.device, args.reps, args.rounds), timed_us(bmm, args.device, args.reps, args.rounds)
            rows.append({"rows": shape[0], "groups": shape[1], "hidden": shape[2], "width": shape[3], "call": name,
                         "grouped_us": g_us, "bmm_us": b_us, "grouped_over_bmm": g_us / b_us})
            print(json.dumps(rows[-1]), flush=True)
    with open(args.out, "w") as f:
        json.dump({"env": env, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
