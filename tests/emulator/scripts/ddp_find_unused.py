"""DDP with find_unused_parameters=True (what Hugging Face's Trainer passes by default) over a model
with a parameter the forward never uses."""

import os

import torch
import torch.distributed as dist

dist.init_process_group("nccl")
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.used = torch.nn.Linear(64, 64)
        self.unused = torch.nn.Linear(64, 64)

    def forward(self, x):
        return self.used(x)


model = torch.nn.parallel.DistributedDataParallel(Model().cuda(), find_unused_parameters=True)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    model(torch.randn(8, 64, device="cuda")).sum().backward()
    opt.step()
    opt.zero_grad()
