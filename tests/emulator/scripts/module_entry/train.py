"""`python -m module_entry.train --steps N`: a relative import that only a module run resolves, and
DDP when torchrun starts several ranks. Prints where it ran from."""

import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn

from .model_def import WIDTH, Net

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=2)
args = p.parse_args()
print(f"entry {sys.argv[0]} package {__package__} rank {os.environ['RANK']}")
model = Net().cuda()
if int(os.environ["WORLD_SIZE"]) > 1:
    dist.init_process_group("nccl")
    model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(model.parameters())
for _ in range(args.steps):
    model(torch.randn(32, WIDTH, device="cuda")).sum().backward()
    opt.step()
    opt.zero_grad()
