"""Reads the caching allocator's raw memory, which Maya cannot emulate."""

import torch

ptr = torch.cuda.caching_allocator_alloc(1024)
