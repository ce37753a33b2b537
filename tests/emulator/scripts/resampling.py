"""2x nearest and bilinear upsampling and adaptive average pooling to 7x7, forward and backward, on a
bf16 feature map in the memory format given: the signatures the resampling cases of `maya
profile`'s pool grid time; then a global average pool (whose channels-last output PyTorch restrides
in place, `as_strided_`, launching nothing) and a `randn_like` (a diffusion model's noise)."""

import argparse

import torch
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--channels-last", action="store_true")
args = p.parse_args()
x = torch.randn(2, 16, 14, 14, device="cuda", dtype=torch.bfloat16)
if args.channels_last:
    x = x.contiguous(memory_format=torch.channels_last)
x.requires_grad_()
outputs = [F.interpolate(x, scale_factor=2.0, mode="nearest"), F.interpolate(x, scale_factor=2.0, mode="bilinear"),
           F.adaptive_avg_pool2d(x, 7)]
torch.autograd.backward(outputs, [torch.randn_like(out) for out in outputs])
pooled = F.adaptive_avg_pool2d(x.detach(), 1)
torch.cuda.synchronize()
