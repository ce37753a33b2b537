"""ResNet's stem max pool and a 2x2 average pool (stride given, as nn.AvgPool2d passes it), forward
and backward, on a bf16 input in the memory format given: the signatures the pooling cases of
`maya profile`'s copy grid time."""

import argparse

import torch
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--channels-last", action="store_true")
args = p.parse_args()
x = torch.randn(2, 16, 32, 32, device="cuda", dtype=torch.bfloat16)
if args.channels_last:
    x = x.contiguous(memory_format=torch.channels_last)
x.requires_grad_()
outputs = [F.max_pool2d(x, 3, 2, 1), F.avg_pool2d(x, 2, 2)]
# Gradients in the outputs' memory format, as the next convolution's backward hands them.
torch.autograd.backward(outputs, [torch.randn_like(out) for out in outputs])
torch.cuda.synchronize()
