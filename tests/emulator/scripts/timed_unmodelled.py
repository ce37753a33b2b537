"""Three steps timed with CUDA events, each running an op no model covers (`aten::searchsorted`)."""

import torch

sorted_values = torch.sort(torch.randn(64, device="cuda")).values
for _ in range(3):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.searchsorted(sorted_values, torch.randn(64, device="cuda"))
    end.record()
    torch.cuda.synchronize()
    print(f"step {start.elapsed_time(end):.4f} ms")
