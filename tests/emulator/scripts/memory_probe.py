"""Allocates tensors of known sizes and prints what torch.cuda reports, one JSON line."""

import json

import torch

a = torch.empty(1000, dtype=torch.float32, device="cuda")  # 4000 B -> 4096 B block
b = torch.empty(3 << 20, dtype=torch.uint8, device="cuda")  # 3 MiB -> large pool, 20 MiB segment
after_alloc = (torch.cuda.memory_allocated(), torch.cuda.memory_reserved())
del b
after_free = (torch.cuda.memory_allocated(), torch.cuda.memory_reserved(), torch.cuda.max_memory_allocated())
torch.cuda.empty_cache()
after_empty = torch.cuda.memory_reserved()
caught = False
try:
    torch.empty(200 << 30, dtype=torch.uint8, device="cuda")
except torch.cuda.OutOfMemoryError:
    caught = True
x = torch.ones(4, device="cuda")
print("MEMORY", json.dumps({
    "after_alloc": after_alloc, "after_free": after_free, "after_empty": after_empty, "caught_oom": caught,
    "item": x.sum().item(), "nonzero": list(torch.nonzero(x > 0).shape), "device": str(x.device),
    "is_cuda": x.is_cuda, "name": torch.cuda.get_device_name(), "cap": torch.cuda.get_device_capability(),
}))
