"""A data-parallel loop whose rank 0 alone also evaluates on the GPU (a master process's eval, as
nanoGPT's train.py runs it): every other rank records the same trace."""

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("nccl")
model = DistributedDataParallel(torch.nn.Linear(64, 64).cuda())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    if dist.get_rank() == 0:
        with torch.no_grad():
            model.module(torch.randn(32, 64, device="cuda")).sum()
    model(torch.randn(16, 64, device="cuda")).sum().backward()
    opt.step()
    opt.zero_grad()
