"""Host memory of emulating one rank of a 70B-parameter Llama (Llama-2/3-70B shapes).

    python benchmarks/emulation_memory.py

Emulates benchmarks/workloads/llama70b_step.py (bf16 weights on one emulated H200, one training step
of 1 x 256 tokens) and prints the process's peak resident set size. The step runs out of emulated GPU
memory once gradients are added to the 140 GB of weights, as it would on a real H200; the point is
the host memory the emulation itself takes.
"""

from __future__ import annotations

import resource
import time
from pathlib import Path

import maya.api

SCRIPT = Path(__file__).parent / "workloads" / "llama70b_step.py"


def main() -> None:
    start = time.perf_counter()
    summary = maya.api.emulate(SCRIPT, [])
    seconds = time.perf_counter() - start
    peak_rss_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 2**30
    print(f"emulated a 70B Llama step in {seconds:.1f} s: oom={summary.oom}, "
          f"peak emulated GPU memory {summary.peak_allocated_bytes / 2**30:.1f} GiB")
    print(f"peak host RSS of this process: {peak_rss_gib:.2f} GiB")


if __name__ == "__main__":
    main()
