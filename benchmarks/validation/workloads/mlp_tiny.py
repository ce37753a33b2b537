"""A deep, narrow residual MLP whose step time is bound by host (CPU) overhead, on one GPU.

Each of --depth residual blocks is LayerNorm -> Linear -> GELU -> Linear, 256 wide, on a batch of
64 rows: every kernel finishes in a few microseconds, so the step takes about as long as Python and
the CUDA launch path need to issue some 20 kernels per block forward and backward, plus the optimizer's.
This is the workload that tests host-overhead modelling.

Launch (the defaults: 48 blocks of width 256, batch 64, fp32, AdamW):

    python benchmarks/validation/workloads/mlp_tiny.py --depth 48 --width 256 --batch-size 64 --optimizer adamw

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


class ResidualBlock(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, width)
        self.fc2 = nn.Linear(width, width)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


class DeepMLP(nn.Module):
    def __init__(self, in_features, width, depth, num_classes):
        super().__init__()
        self.inp = nn.Linear(in_features, width)
        self.blocks = nn.Sequential(*[ResidualBlock(width) for _ in range(depth)])
        self.out = nn.Linear(width, num_classes)

    def forward(self, x):
        # x: (B, in_features) -> (B, width) -> (B, num_classes)
        return self.out(self.blocks(self.inp(x)))


def build_model(args, device):
    return DeepMLP(args.in_features, args.width, args.depth, args.num_classes).to(device)


def get_batch(args, device):
    x = torch.randn(args.batch_size, args.in_features, device=device)
    y = torch.randint(0, args.num_classes, (args.batch_size,), device=device)
    return x, y


def compute_loss(model, batch):
    x, y = batch
    return F.cross_entropy(model(x), y)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch-size", type=int, default=64, help="rows per step")
    p.add_argument("--in-features", type=int, default=128, help="input features per row")
    p.add_argument("--width", type=int, default=256, help="hidden width")
    p.add_argument("--depth", type=int, default=48, help="residual blocks")
    p.add_argument("--num-classes", type=int, default=10, help="output classes")
    p.add_argument("--optimizer", choices=["adamw", "sgd"], default="adamw")
    p.add_argument("--precision", choices=["bf16-autocast", "fp32"], default="fp32")
    p.add_argument("--steps", type=int, default=12, help="measured steps")
    p.add_argument("--warmup", type=int, default=4, help="unmeasured steps before them")
    p.add_argument("--log-interval", type=int, default=4, help="print the loss every this many steps")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    torch.manual_seed(0)
    model = build_model(args, device)
    print(f"number of parameters: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M")
    if args.optimizer == "adamw":
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
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
