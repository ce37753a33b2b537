"""DistributedDataParallel with a whole training step captured in a CUDA graph, as PyTorch's documentation
has it: 11 warm-up steps on a side stream (DDP's own set-up happens in them), the capture, 4 replays."""

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("nccl")
torch.cuda.set_device(dist.get_rank())
model = DDP(torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024)).cuda())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(64, 1024, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(11):
        opt.zero_grad(set_to_none=True)
        model(x).sum().backward()
        opt.step()
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
opt.zero_grad(set_to_none=True)
with torch.cuda.graph(g):
    model(x).sum().backward()
    opt.step()
for _ in range(4):
    g.replay()
torch.cuda.synchronize()
