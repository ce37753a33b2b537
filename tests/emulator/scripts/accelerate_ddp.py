"""A Hugging Face accelerate training loop (DDP on several ranks): bf16 mixed precision, gradient
accumulation over two micro-batches, clipping, and a saved state at the end."""

import sys

import torch
from accelerate import Accelerator

acc = Accelerator(mixed_precision="bf16", gradient_accumulation_steps=2)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64))
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
loader = torch.utils.data.DataLoader([torch.randn(64) for _ in range(32)], batch_size=4)
model, opt, loader = acc.prepare(model, opt, loader)
for x in loader:
    with acc.accumulate(model):
        acc.backward(model(x).pow(2).mean())
        if acc.sync_gradients:
            acc.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad()
acc.save_state(sys.argv[1])
