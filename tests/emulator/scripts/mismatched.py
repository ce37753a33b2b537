"""A bug: rank 1 all-reduces twice as many elements as rank 0 (on GPUs, NCCL would hang or corrupt).

    torchrun --nproc-per-node 2 mismatched.py
"""

import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank = dist.get_rank()
x = torch.zeros(4 if rank == 0 else 8, device="cuda")  # 16 bytes on rank 0, 32 on rank 1
dist.all_reduce(x)
dist.destroy_process_group()
