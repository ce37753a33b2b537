"""RoPE's rotate_half concatenations as Llama-style models issue them, over a spread of shapes, for
`maya profile --trace` to time: the copy grid times `cat`s whose two halves share one layout
(`profile_grid._concat_cases`), but a model concatenates `-x2`, a new tensor laid out like its
heads-transposed input, with `x1`, a slice of that input. Those cats were estimated at 0.63-0.66 of
their measured time in the calibration workloads (`python benchmarks/calibrate.py --pairs copy`,
session 21: Llama 150M 1.74 ms measured against 1.09, Llama 3B 12.56 against 7.88, HF Llama 0.57
against 0.38).

Run on the CPU machine under the emulator, and time the trace on a GPU machine:

    maya emulate --trace-dir rope_trace benchmarks/gpu/rope_cat_shapes.py
    python3 -m maya.estimator.profiler --trace rope_trace --out OUT     # on the GPU machine

Only torch is imported.
"""

import torch

SHAPES = (  # batch, heads, sequence, head dim: a spread, not the calibration workloads' own shapes
    (1, 32, 4096, 128), (2, 8, 2048, 128), (2, 32, 2048, 128), (4, 16, 2048, 64), (4, 4, 1024, 128),
    (4, 24, 1024, 128), (8, 8, 512, 64), (8, 12, 2048, 64), (16, 12, 512, 64), (16, 2, 1024, 64),
    (32, 8, 256, 64), (2, 40, 1024, 128),
)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((-x2, x1), dim=-1)


for dtype in (torch.bfloat16, torch.float32):
    for b, h, s, d in SHAPES:
        # q = q_proj(x).view(b, s, h, d).transpose(1, 2): memory [b, s, h, d], seen as [b, h, s, d].
        q = torch.empty(b, s, h * d, device="cuda", dtype=dtype).view(b, s, h, d).transpose(1, 2)
        rotate_half(q)
torch.cuda.synchronize()
