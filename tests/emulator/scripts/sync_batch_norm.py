"""A small CNN with SyncBatchNorm under DDP, three steps: `torchrun --nproc-per-node 2 sync_batch_norm.py [channels_last]`."""

import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn

dist.init_process_group("nccl")
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                      nn.Flatten(), nn.Linear(16, 10))
model = nn.SyncBatchNorm.convert_sync_batchnorm(model).cuda()
layout = torch.channels_last if sys.argv[1:] == ["channels_last"] else torch.contiguous_format
model = model.to(memory_format=layout)
model = nn.parallel.DistributedDataParallel(model, device_ids=[torch.cuda.current_device()])
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x = torch.randn(8, 3, 32, 32, device="cuda").to(memory_format=layout)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x).float().sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
dist.destroy_process_group()
