"""DDP on every rank for three steps, then a final checkpoint write that fails: on every rank
("all") or on rank 0 only ("zero").

    torchrun --nproc-per-node 2 fails_after_steps.py all
"""

import os
import sys

import torch
import torch.distributed as dist

dist.init_process_group("nccl")
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(256, 256).cuda())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    model(torch.randn(32, 256, device="cuda")).sum().backward()
    opt.step()
    opt.zero_grad()
if sys.argv[1] == "all" or dist.get_rank() == 0:
    raise OSError("[Errno 28] No space left on device: '/ckpt/final.pt'")
