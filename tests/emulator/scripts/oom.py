"""Does not catch the OOM: the run must report oom and fail."""

import torch

weights = [torch.empty(40 << 30, dtype=torch.uint8, device="cuda") for _ in range(5)]
