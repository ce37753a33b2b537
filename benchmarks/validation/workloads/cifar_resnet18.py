"""ResNet-18 CIFAR-10 training on one GPU, with synthetic 32x32 images copied from pinned host memory.

The network is the CIFAR variant of ResNet-18 (as in kuangliu/pytorch-cifar): a 3x3 stem with no
max-pool, BasicBlocks [2, 2, 2, 2] of widths 64-512, BatchNorm, 10 classes. Small images make every
kernel short, so this workload sits between compute-bound and launch-bound. Like a DataLoader with
pin_memory=True, batches come from page-locked host memory and are copied with non_blocking=True.

Launch (the defaults: 256 images, bf16 autocast, channels-last):

    python benchmarks/validation/workloads/cifar_resnet18.py --batch-size 256 --precision bf16-autocast --channels-last

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
NUM_HOST_BATCHES = 4  # distinct synthetic batches held in pinned host memory, used in turn


class BasicBlock(nn.Module):
    def __init__(self, in_channels, out_channels, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                nn.BatchNorm2d(out_channels),
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet18(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        layers, in_channels = [], 64
        for out_channels, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [BasicBlock(in_channels, out_channels, stride), BasicBlock(out_channels, out_channels, 1)]
            in_channels = out_channels
        self.layers = nn.Sequential(*layers)
        self.linear = nn.Linear(512, num_classes)

    def forward(self, x):
        # x: (B, 3, 32, 32) -> (B, 512, 4, 4) -> (B, 512) -> (B, num_classes)
        out = self.layers(F.relu(self.bn1(self.conv1(x))))
        return self.linear(torch.flatten(F.adaptive_avg_pool2d(out, 1), 1))


def build_model(args, device):
    model = ResNet18().to(device)
    if args.channels_last:
        model = model.to(memory_format=torch.channels_last)
    return model


_host_batches = []  # NUM_HOST_BATCHES (images, labels) pairs on the host, pinned on a GPU machine


def get_batch(args, device):
    if not _host_batches:
        for _ in range(NUM_HOST_BATCHES):
            images = torch.randn(args.batch_size, 3, 32, 32)
            labels = torch.randint(0, 10, (args.batch_size,))
            if device == "cuda":
                images, labels = images.pin_memory(), labels.pin_memory()
            _host_batches.append((images, labels))
    images, labels = _host_batches.pop(0)
    _host_batches.append((images, labels))  # use the host batches in turn
    images = images.to(device, non_blocking=True)
    if args.channels_last:
        images = images.contiguous(memory_format=torch.channels_last)
    return images, labels.to(device, non_blocking=True)


def compute_loss(model, batch):
    images, labels = batch
    return F.cross_entropy(model(images), labels)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch-size", type=int, default=256, help="images per step")
    p.add_argument("--precision", choices=["bf16-autocast", "fp32"], default="bf16-autocast")
    p.add_argument("--channels-last", action="store_true", help="NHWC memory format for weights and inputs")
    p.add_argument("--steps", type=int, default=12, help="measured steps")
    p.add_argument("--warmup", type=int, default=4, help="unmeasured steps before them")
    p.add_argument("--log-interval", type=int, default=4, help="print the loss every this many steps")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    model = build_model(args, device)
    print(f"number of parameters: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4, nesterov=True)
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
