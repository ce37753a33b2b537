"""A training loop that logs its own step time with CUDA events (written to the file in argv[1])."""

import sys

import torch

model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
times = []
for _ in range(4):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    model(torch.randn(512, 256, device="cuda")).sum().backward()
    opt.step()
    opt.zero_grad()
    end.record()
    torch.cuda.synchronize()
    times.append(start.elapsed_time(end))
with open(sys.argv[1], "w") as f:
    f.write(" ".join(f"{t:.6f}" for t in times))
