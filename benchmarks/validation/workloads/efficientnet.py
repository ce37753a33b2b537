"""EfficientNet-B0 image-classification training on one GPU, with synthetic images.

The network follows Tan and Le 2019, "EfficientNet: Rethinking Model Scaling for Convolutional Neural
Networks", table 1: a 3x3 stride-2 stem of 32 channels, then MBConv blocks (1x1 expansion by t ->
k x k depthwise -> squeeze-and-excitation over a quarter of the block's input channels -> 1x1 linear
projection, BatchNorm after each convolution, SiLU after the first two, a residual add where the shape
allows) with (t, k, s, c, n) = (1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
(6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1), a 1x1 convolution to 1280 channels, global
average pooling, dropout 0.2 and a linear classifier (no stochastic depth). Trained with RMSprop
(decay 0.9, momentum 0.9, weight decay 1e-5) as in the paper; cuDNN's heuristics choose the
convolution algorithms (cudnn.benchmark left off).

Launch (the defaults: 128 images of 224x224, bf16 autocast, channels-last):

    python benchmarks/validation/workloads/efficientnet.py --batch-size 128 --precision bf16-autocast --channels-last

The last line printed is `MAYA_RESULT {json}` with the CUDA-event time of every measured step (ms)
and the peak memory after warm-up (bytes).
"""

import argparse
import json
import statistics
from contextlib import nullcontext

import torch
import torch.nn as nn
import torch.nn.functional as F

device = "cuda"

STAGES = ((1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3), (6, 5, 1, 112, 3),
          (6, 5, 2, 192, 4), (6, 3, 1, 320, 1))
"""(expansion t, kernel k, stride s, output channels c, blocks n) of each stage (table 1)."""


def conv_bn(in_channels, out_channels, kernel_size, stride=1, groups=1, act=True):
    layers = [nn.Conv2d(in_channels, out_channels, kernel_size, stride, kernel_size // 2, groups=groups, bias=False),
              nn.BatchNorm2d(out_channels)]
    if act:
        layers.append(nn.SiLU(inplace=True))
    return nn.Sequential(*layers)


class SqueezeExcite(nn.Module):
    def __init__(self, channels, squeezed):
        super().__init__()
        self.reduce = nn.Conv2d(channels, squeezed, 1)
        self.expand = nn.Conv2d(squeezed, channels, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)  # (B, C, 1, 1)
        s = self.expand(F.silu(self.reduce(s)))
        return x * torch.sigmoid(s)


class MBConv(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, expansion):
        super().__init__()
        hidden = in_channels * expansion
        layers = [conv_bn(in_channels, hidden, 1)] if expansion != 1 else []
        layers += [conv_bn(hidden, hidden, kernel_size, stride, groups=hidden),
                   SqueezeExcite(hidden, max(1, in_channels // 4)),
                   conv_bn(hidden, out_channels, 1, act=False)]
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and in_channels == out_channels

    def forward(self, x):
        return x + self.block(x) if self.residual else self.block(x)


class EfficientNetB0(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        layers = [conv_bn(3, 32, 3, 2)]
        in_channels = 32
        for t, k, s, c, n in STAGES:
            for i in range(n):
                layers.append(MBConv(in_channels, c, k, s if i == 0 else 1, t))
                in_channels = c
        layers.append(conv_bn(in_channels, 1280, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, num_classes))

    def forward(self, x):
        x = self.features(x)  # (B, 3, 224, 224) -> (B, 1280, 7, 7)
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)  # (B, 1280)
        return self.classifier(x)  # (B, num_classes)


def build_model(args, device):
    model = EfficientNetB0().to(device)
    if args.channels_last:
        model = model.to(memory_format=torch.channels_last)
    return model


def get_batch(args, device):
    images = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=device)
    if args.channels_last:
        images = images.contiguous(memory_format=torch.channels_last)
    labels = torch.randint(0, 1000, (args.batch_size,), device=device)
    return images, labels


def compute_loss(model, batch):
    images, labels = batch
    return F.cross_entropy(model(images), labels)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch-size", type=int, default=128, help="images per step")
    p.add_argument("--image-size", type=int, default=224, help="image height and width (pixels)")
    p.add_argument("--precision", choices=["bf16-autocast", "fp32"], default="bf16-autocast")
    p.add_argument("--channels-last", action="store_true", help="NHWC memory format for weights and inputs")
    p.add_argument("--steps", type=int, default=12, help="measured steps")
    p.add_argument("--warmup", type=int, default=4, help="unmeasured steps before them")
    p.add_argument("--log-interval", type=int, default=4, help="print the loss every this many steps")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    torch.manual_seed(0)
    model = build_model(args, device)
    print(f"number of parameters: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M")
    optimizer = torch.optim.RMSprop(model.parameters(), lr=0.016, alpha=0.9, eps=1e-3, momentum=0.9,
                                    weight_decay=1e-5)
    ctx = torch.autocast(device, dtype=torch.bfloat16) if args.precision == "bf16-autocast" else nullcontext()

    events = []  # (start, end) CUDA events of each measured step
    for step in range(args.warmup + args.steps):
        if step == args.warmup:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        batch = get_batch(args, device)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        with ctx:
            loss = compute_loss(model, batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        end.record()
        if step >= args.warmup:
            events.append((start, end))
        if step % args.log_interval == 0 or step == args.warmup + args.steps - 1:
            print(f"step {step}: loss {loss.item():.4f}")
    torch.cuda.synchronize()

    step_ms = [start.elapsed_time(end) for start, end in events]
    result = {
        "step_ms": step_ms,
        "median_step_ms": statistics.median(step_ms),
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "max_memory_reserved": torch.cuda.max_memory_reserved(),
    }
    print("MAYA_RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
