"""new_group, split_group and a 2-D init_device_mesh on 4 ranks, one all-reduce on each.

    torchrun --nproc-per-node 4 process_groups.py
"""

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh

dist.init_process_group("nccl")
rank = dist.get_rank()
evens, odds = dist.new_group([0, 2]), dist.new_group([1, 3])
mine = evens if rank % 2 == 0 else odds
assert dist.get_process_group_ranks(mine) == ([0, 2] if rank % 2 == 0 else [1, 3])
assert dist.get_backend(mine) == "nccl"
x = torch.zeros(4, device="cuda")
dist.all_reduce(x, group=mine)
halves = dist.split_group(split_ranks=[[0, 1], [2, 3]])
assert dist.get_process_group_ranks(halves) == ([0, 1] if rank < 2 else [2, 3])
dist.all_reduce(x, group=halves)
mesh = init_device_mesh("cuda", (2, 2), mesh_dim_names=("dp", "tp"))
dist.all_reduce(x, group=mesh["tp"].get_group())
dist.destroy_process_group()
