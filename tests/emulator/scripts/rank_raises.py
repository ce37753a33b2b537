"""Rank 1 raises after its first collective; the others finish.

    torchrun --nproc-per-node 2 rank_raises.py
"""

import torch
import torch.distributed as dist


def check_shard(rank):
    if rank == 1:
        raise RuntimeError("shard 1 is corrupt")


dist.init_process_group("nccl")
x = torch.zeros(4, device="cuda")
dist.all_reduce(x)
check_shard(dist.get_rank())
dist.destroy_process_group()
