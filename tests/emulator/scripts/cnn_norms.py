"""A CNN's normalisations of [N, C, H, W] activations, forward and backward in training mode, in the
memory format given: batch norm (ResNet's, MobileNet's), group norm (a diffusion U-Net's, 32
groups) and layer norm over the channels of the NHWC view (ConvNeXt's: on an NCHW tensor that view is
a permutation, on a channels-last one it is contiguous), with float32 parameters on a bfloat16 activation under autocast (`--precision
bf16-autocast`), all float32, or all bfloat16 (`bf16`). The signatures the CNN-layout cases of
`maya profile`'s norm grid time."""

import argparse
from contextlib import nullcontext

import torch

p = argparse.ArgumentParser()
p.add_argument("--channels-last", action="store_true")
p.add_argument("--precision", choices=("bf16-autocast", "fp32", "bf16"), default="bf16-autocast")
args = p.parse_args()
n, c, h, w = 4, 64, 10, 12
strides = (c * h * w, 1, w * c, c) if args.channels_last else (c * h * w, h * w, w, 1)
x_dtype = torch.float32 if args.precision == "fp32" else torch.bfloat16
param_dtype = torch.bfloat16 if args.precision == "bf16" else torch.float32
x = torch.empty_strided((n, c, h, w), strides, device="cuda", dtype=x_dtype).normal_().requires_grad_()
amp = torch.autocast("cuda", torch.bfloat16) if args.precision == "bf16-autocast" else nullcontext()
for norm in (torch.nn.BatchNorm2d(c), torch.nn.GroupNorm(32, c), torch.nn.LayerNorm(c)):
    norm = norm.to("cuda", param_dtype)
    with amp:
        y = norm(x.permute(0, 2, 3, 1) if isinstance(norm, torch.nn.LayerNorm) else x)
    y.backward(torch.ones_like(y))
torch.cuda.synchronize()
