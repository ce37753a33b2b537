"""ResNet-50 ImageNet-style training on one GPU, with synthetic images.

The network is ResNet-50 v1.5 (He et al. 2016, "Deep Residual Learning", table 1, with the stride
on the 3x3 convolution as in torchvision): bottleneck blocks [3, 4, 6, 3], BatchNorm after every
convolution, 1000 classes. Trained with SGD + momentum as in the pytorch/examples ImageNet script,
with cudnn.benchmark on.

Launch (the defaults: 64 images of 224x224, fp32):

    python benchmarks/validation/workloads/resnet50.py --batch-size 64 --precision fp32

bf16 autocast with channels-last tensors:

    python benchmarks/validation/workloads/resnet50.py --batch-size 128 --precision bf16-autocast --channels-last

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


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, in_channels, width, stride):
        super().__init__()
        out_channels = width * self.expansion
        self.conv1 = nn.Conv2d(in_channels, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out_channels, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels)
        self.downsample = None
        if stride != 1 or in_channels != out_channels:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                nn.BatchNorm2d(out_channels),
            )

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return F.relu(out + identity)


class ResNet(nn.Module):
    def __init__(self, layers=(3, 4, 6, 3), num_classes=1000, base_width=64):
        super().__init__()
        self.conv1 = nn.Conv2d(3, base_width, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(base_width)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        stages = []
        in_channels = base_width
        for i, n_blocks in enumerate(layers):
            width = base_width * 2**i
            blocks = []
            for j in range(n_blocks):
                blocks.append(Bottleneck(in_channels, width, stride=2 if (i > 0 and j == 0) else 1))
                in_channels = width * Bottleneck.expansion
            stages.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.fc = nn.Linear(in_channels, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        # x: (B, 3, 224, 224) -> (B, 64, 56, 56) after the stem
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))  # (B, 2048, 7, 7)
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)  # (B, 2048)
        return self.fc(x)  # (B, num_classes)


def build_model(args, device):
    model = ResNet(base_width=args.base_width).to(device)
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
    p.add_argument("--batch-size", type=int, default=64, help="images per step")
    p.add_argument("--image-size", type=int, default=224, help="image height and width (pixels)")
    p.add_argument("--base-width", type=int, default=64, help="channels of the stem (64 in ResNet-50)")
    p.add_argument("--precision", choices=["bf16-autocast", "fp32"], default="fp32")
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
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
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
