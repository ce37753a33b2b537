"""The copies and reductions of a CNN's [N, C, H, W] activations, on a bf16 input in the memory
format given: a cast, both ways of converting to the other memory format, global average pooling
and a per-channel sum. The signatures the CNN-layout cases of `maya profile`'s copy and reduction
grids time."""

import argparse

import torch

p = argparse.ArgumentParser()
p.add_argument("--channels-last", action="store_true")
args = p.parse_args()
n, c, h, w = 4, 16, 10, 12
strides = (c * h * w, 1, w * c, c) if args.channels_last else (c * h * w, h * w, w, 1)
x = torch.empty_strided((n, c, h, w), strides, device="cuda", dtype=torch.bfloat16)
other = torch.contiguous_format if args.channels_last else torch.channels_last
x.to(torch.float32)
x.to(memory_format=other)
x.contiguous(memory_format=other)
x.mean((-1, -2), keepdim=True)
x.sum((0, 2, 3))
torch.cuda.synchronize()
