"""Times a GPU-bound chain of queued kernels with CUDA events, each step its own iteration.

    python timed_queued.py TIMES_FILE
"""

import sys

import torch

import maya

x = torch.randn(4096, 4096, device="cuda")
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
times = []
for _ in range(3):
    torch.cuda.synchronize()
    start.record()
    for _ in range(200):
        x.mul_(1.0001)
    end.record()
    end.synchronize()
    times.append(start.elapsed_time(end))
    maya.mark_iteration()
with open(sys.argv[1], "w") as f:
    f.write(" ".join(f"{t:.6f}" for t in times))
