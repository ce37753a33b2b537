"""Runs out of memory in forward (the third layer's output does not fit), then would run backward."""

import torch

m = torch.nn.Sequential(*[torch.nn.Linear(4096, 4096) for _ in range(4)]).cuda()
x = torch.randn(8192, 4096, device="cuda", requires_grad=True)
torch.cuda.set_per_process_memory_fraction(0.0062)
y = m(x).sum()
print("fwd ok", torch.cuda.memory_allocated() / 2**30)
y.backward()
print("bwd ok")
