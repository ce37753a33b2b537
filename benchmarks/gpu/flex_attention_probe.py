"""Compiled FlexAttention (`torch.compile(flex_attention)`), forward and forward + backward, timed with
CUDA events (median of REPS, after a warm-up that compiles), beside SDPA's FlashAttention of the same
shapes.

The same script gives Maya's predictions: under `maya emulate`, `Event.elapsed_time` answers the
simulated time between the two records (maya/event_timing.py). Maya records a compiled FlexAttention
as FlashAttention's op (maya/emulator/flex_attention.py); this measures how far that stands from the
Triton kernels.

    python benchmarks/gpu/flex_attention_probe.py --out flex_h200.json          # on the GPU
    maya emulate benchmarks/gpu/flex_attention_probe.py --out flex_maya.json     # Maya's predictions
    python benchmarks/flex_attention_check.py flex_h200.json flex_maya.json

Shapes (batch, query heads, key/value heads, tokens, head dim), bfloat16; masks: causal, a document
mask of 4 equal documents (causal within each), and none.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

SHAPES = ((4, 16, 16, 2048, 128), (2, 32, 8, 4096, 128), (8, 16, 16, 1024, 64), (1, 32, 32, 8192, 128))
MASKS = ("causal", "documents", "none")
REPS = 10


def mask_for(kind: str, tokens: int):
    if kind == "none":
        return None
    document = tokens // 4

    def causal(b, h, q, k):
        return q >= k

    def documents(b, h, q, k):
        return (q >= k) & (q // document == k // document)

    return create_block_mask(causal if kind == "causal" else documents, None, None, tokens, tokens, device="cuda")


def timed_ms(fn) -> float:
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPS):
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
    args = p.parse_args()
    rows, started = [], time.perf_counter()
    for batch, heads, kv_heads, tokens, dim in SHAPES:
        q = torch.randn(batch, heads, tokens, dim, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        k = torch.randn(batch, kv_heads, tokens, dim, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        v = torch.randn(batch, kv_heads, tokens, dim, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        gqa = kv_heads != heads
        for mask in MASKS:
            # A fresh compile per configuration: past dynamo's recompile limit (8) a compiled function
            # falls back to eager, the dense form (session 44's first H100 run: 13.6 ms and 92 ms rows).
            torch._dynamo.reset()
            flex = torch.compile(flex_attention)
            block_mask = mask_for(mask, tokens)
            forward = lambda: flex(q, k, v, block_mask=block_mask, enable_gqa=gqa)  # noqa: E731
            both = lambda: forward().sum().backward()  # noqa: E731
            for kind, fn in (("flex_forward", forward), ("flex_forward_backward", both)):
                rows.append({"shape": [batch, heads, kv_heads, tokens, dim], "mask": mask, "kind": kind,
                             "median_ms": timed_ms(fn)})
                print(rows[-1], flush=True)
        sdpa = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)  # noqa: E731
        rows.append({"shape": [batch, heads, kv_heads, tokens, dim], "mask": "causal", "kind": "sdpa_forward",
                     "median_ms": timed_ms(sdpa)})
        print(rows[-1], flush=True)
    env = {"gpu_name": torch.cuda.get_device_name(), "torch_version": torch.__version__,
           "cuda_version": torch.version.cuda, "date": time.strftime("%Y-%m-%d"), "reps": REPS,
           "seconds": round(time.perf_counter() - started, 1)}
    with open(args.out, "w") as f:
        json.dump({"env": env, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
