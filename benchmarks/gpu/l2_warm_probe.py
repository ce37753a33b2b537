"""How much faster an op runs when the op before it has just written its input (L2-resident) than
after an L2 flush, the way `maya profile` times every op.

    python3 benchmarks/gpu/l2_warm_probe.py --out l2_warm.json      # on the GPU machine, about a minute

In a training step most ops read what the op before them wrote; the profiles flush the L2 cache
before every timed run (cold inputs), so a memory-bound op whose input fits in L2 may run faster in
training than profiled (`python benchmarks/calibrate.py --pairs elementwise` lists each elementwise
op's in-training time over its estimate). For each op and input size this times, with `maya
profile`'s timer (`profiler._Timer`: CUDA events around the op alone), (a) cold: the L2 flushed, then
the op; (b) warm: the L2 flushed, a copy that writes the op's input, then the op. The ratio warm /
cold against the input's size and the GPU's L2 size is what a residency-aware estimate would need
(the trace would also have to say which op wrote each input). `--device cpu` runs the same loops
timed by the wall clock (a smoke test).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import torch
import torch.nn.functional as F

SIZES_MB = (1, 4, 16, 32, 48, 64, 96, 128, 256)
"""Input sizes (MiB) per op: around an H200's 60 MiB of L2."""


def _elementwise(name: str, mb: int, device: str):
    x = torch.empty(mb * 2**20 // 2, dtype=torch.bfloat16, device=device)
    ops = {"relu": lambda: torch.relu(x), "mul": lambda: x * x, "pow": lambda: x.pow(2),
           "add_": lambda: x.add_(1.0), "sum": lambda: x.sum()}
    return x, ops[name]


def _layer_norm(mb: int, device: str):
    x = torch.empty(mb * 2**20 // 2 // 768, 768, dtype=torch.bfloat16, device=device)
    return x, lambda: F.layer_norm(x, (768,))


def _conv(mb: int, device: str):
    channels, side = 128, 56
    batch = max(1, mb * 2**20 // 2 // (channels * side * side))
    x = torch.empty(batch, channels, side, side, dtype=torch.bfloat16, device=device).to(memory_format=torch.channels_last)
    w = torch.randn(channels, channels, 3, 3, dtype=torch.bfloat16, device=device).to(memory_format=torch.channels_last)
    return x, lambda: F.conv2d(x, w, padding=1)


def cases(device: str, sizes_mb=SIZES_MB):
    """(op name, input MiB, input tensor, the op); convolutions at the sizes up to 96 MiB."""
    for name in ("relu", "mul", "pow", "add_", "sum"):
        for mb in sizes_mb:
            x, fn = _elementwise(name, mb, device)
            yield name, mb, x, fn
    for mb in sizes_mb:
        x, fn = _layer_norm(mb, device)
        yield "layer_norm", mb, x, fn
    for mb in (m for m in sizes_mb if m <= 96):
        x, fn = _conv(mb, device)
        yield "conv3x3_bf16_channels_last", mb, x, fn


def time_op(x: torch.Tensor, fn, warm: bool, reps: int, timer) -> float:
    """Median microseconds of `fn` over `reps` runs of `timer` (`profiler._Timer`: each run after an
    L2 flush) and, when `warm`, after a copy that writes `x` (from a source the flush left cold too)."""
    source = torch.empty_like(x)
    fn()  # warm-up: cuDNN's and the caching allocator's first-call work
    return statistics.median(timer.time_us(fn, reps, before=(lambda: x.copy_(source)) if warm else None))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True, help="JSON file to write")
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--device", default="cuda")
    p.add_argument("--sizes", default=",".join(map(str, SIZES_MB)), help="comma-separated input sizes, MiB")
    args = p.parse_args(argv)
    from maya.estimator.profiler import _Timer

    cuda = args.device == "cuda"
    timer = _Timer(torch.device(args.device))
    env = {"device": torch.cuda.get_device_name() if cuda else "cpu", "torch": torch.__version__,
           "cuda": torch.version.cuda, "l2_bytes": torch.cuda.get_device_properties(0).L2_cache_size if cuda else None}
    rows = []
    for name, mb, x, fn in cases(args.device, [int(v) for v in args.sizes.split(",")]):
        cold = time_op(x, fn, warm=False, reps=args.reps, timer=timer)
        warm = time_op(x, fn, warm=True, reps=args.reps, timer=timer)
        rows.append({"op": name, "input_mib": mb, "cold_us": cold, "warm_us": warm, "warm_over_cold": warm / cold})
        print(f"{name:28s} {mb:4d} MiB  cold {cold:9.1f} us  warm {warm:9.1f} us  warm/cold {warm / cold:.3f}", flush=True)
        del x, fn
    args.out.write_text(json.dumps({"env": env, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
