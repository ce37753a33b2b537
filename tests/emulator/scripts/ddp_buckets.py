"""DDP over five bias-free 512x512 float32 linears (1 MiB of gradient each).

    torchrun --nproc-per-node 2 ddp_buckets.py [--bucket-cap-mb N]
"""

import argparse

import torch
import torch.distributed as dist
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--bucket-cap-mb", type=int, default=None, help="DDP's bucket_cap_mb; default: DDP's own (25)")
args = p.parse_args()

dist.init_process_group("nccl")
torch.cuda.set_device(dist.get_rank())
model = nn.Sequential(*(nn.Linear(512, 512, bias=False) for _ in range(5))).cuda()
model = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=args.bucket_cap_mb)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    model(torch.randn(8, 512, device="cuda")).sum().backward()
    opt.step()
    opt.zero_grad()
dist.destroy_process_group()
