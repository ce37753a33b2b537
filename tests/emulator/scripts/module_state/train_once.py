"""Initializes a library that refuses a second initialization in one process, then steps a model.

    torchrun --nproc-per-node 4 train_once.py
"""

import once
import torch
import torch.distributed as dist

once.initialize()
dist.init_process_group("nccl")
torch.cuda.set_device(dist.get_rank() % torch.cuda.device_count())
model = torch.nn.Linear(32, 32).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model(torch.randn(8, 32, device="cuda")).sum().backward()
optimizer.step()
dist.destroy_process_group()
