"""Rank 1's process dies (os._exit, as a segfault or the OOM killer would end it); each start is logged.

    torchrun --nproc-per-node 2 rank_dies.py STARTS_FILE
"""

import os
import sys

import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank = dist.get_rank()
with open(sys.argv[1], "a") as f:
    f.write(f"{rank}\n")
if rank == 1:
    os._exit(3)
dist.all_reduce(torch.zeros(4, device="cuda"))
dist.destroy_process_group()
