"""Non-reentrant checkpointing with backward called inside the autocast region (as pipeline schedules do)."""

import torch
from torch.utils.checkpoint import checkpoint

model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.Linear(64, 64)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(4, 64, device="cuda", requires_grad=True)
with torch.autocast("cuda", dtype=torch.bfloat16):
    loss = checkpoint(model, x, use_reentrant=False).float().sum()
    loss.backward()
opt.step()
