"""On a 2x2 (dp, tp) mesh, only rank 3 -- last in both dimensions -- runs one extra kernel.

    torchrun --nproc-per-node 4 corner_rank.py

Probes that move one dimension at a time (ranks 1 and 2) look like rank 0; only a rank that moves
both shows the difference.
"""

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh

dist.init_process_group("nccl")
mesh = init_device_mesh("cuda", (2, 2), mesh_dim_names=("dp", "tp"))
x = torch.zeros(4, device="cuda")
dist.all_reduce(x, group=mesh["tp"].get_group())
dist.all_reduce(x, group=mesh["dp"].get_group())
if mesh["dp"].get_local_rank() == 1 and mesh["tp"].get_local_rank() == 1:
    x = x * 2
dist.destroy_process_group()
