"""DDP with torch's ZeroRedundancyOptimizer, three steps, then (with `consolidate`) its state gathered on
rank 0: `torchrun --nproc-per-node 2 zero_redundancy.py [consolidate]`."""

import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.optim import ZeroRedundancyOptimizer

dist.init_process_group("nccl")
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
model = nn.Sequential(*[nn.Linear(256, 256) for _ in range(4)]).cuda()
ddp = nn.parallel.DistributedDataParallel(model, device_ids=[torch.cuda.current_device()])
opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-3)
for _ in range(3):
    ddp(torch.randn(32, 256, device="cuda")).sum().backward()
    opt.step()
    opt.zero_grad()
if sys.argv[1:] == ["consolidate"]:
    opt.consolidate_state_dict(to=0)
dist.destroy_process_group()
