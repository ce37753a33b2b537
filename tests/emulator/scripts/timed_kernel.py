"""One GEMM timed with CUDA events behind queued GPU work (an L2 flush), as a microbenchmark times a
kernel; writes its three timings to the file in argv[1]."""

import sys

import torch

flush = torch.empty(64 << 20, device="cuda")
a, b = torch.randn(2048, 2048, device="cuda"), torch.randn(2048, 2048, device="cuda")
times = []
for _ in range(3):
    torch.cuda.synchronize()
    flush.zero_()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.mm(a, b)
    end.record()
    torch.cuda.synchronize()
    times.append(start.elapsed_time(end))
with open(sys.argv[1], "w") as f:
    f.write(" ".join(f"{t:.6f}" for t in times))
