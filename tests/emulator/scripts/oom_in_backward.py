"""Runs out of memory in backward, on the autograd engine's worker thread (a checkpoint recomputing)."""

import torch
from torch.utils.checkpoint import checkpoint
m = torch.nn.Sequential(*[torch.nn.Linear(4096, 4096) for _ in range(4)]).cuda()
x = torch.randn(8192, 4096, device="cuda", requires_grad=True)
torch.cuda.set_per_process_memory_fraction(0.0062)
print("alloc GiB", torch.cuda.memory_allocated() / 2**30)
y = checkpoint(m, x, use_reentrant=False).sum()
print("fwd ok", torch.cuda.memory_allocated() / 2**30)
y.backward()
print("bwd ok")
