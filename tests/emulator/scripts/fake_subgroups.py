"""torchtitan's device mesh: dimensions the job leaves unused get backend "fake" (DeviceMesh's
`backend_override`), which communicate nothing; a DTensor parameter is initialized with a random op
(from torch 2.13 through the higher-order operator `run_dtensor_rng_op`), then a sharded step runs;
last, every group's timeout is set, as torchtitan does after its first step."""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard, distribute_tensor

dist.init_process_group("nccl")
torch.cuda.set_device(dist.get_rank())
world = init_device_mesh("cuda", (dist.get_world_size(),), mesh_dim_names=("world",))
mesh = world._unflatten(0, (dist.get_world_size(), 1), ("dp", "tp"), backend_override={"tp": "fake"})
unused = dist.new_group(list(range(dist.get_world_size())), backend="fake")
assert dist.get_backend(unused) == "fake" and dist.get_backend(mesh["tp"].get_group()) == "fake"
assert dist.get_backend(mesh["dp"].get_group()) == "nccl"

weight = distribute_tensor(torch.empty(64, 32, device="cuda"), mesh["dp"], [Shard(0)])
torch.nn.init.normal_(weight, std=0.02)
x = torch.ones(16, 32, device="cuda")
for _ in range(2):
    dist.all_reduce(x, group=unused)  # a fake group's call: nothing is communicated or recorded
    dist.all_reduce(x, group=mesh["tp"].get_group())
    y = x @ weight.full_tensor().t()
    dist.all_reduce(y, group=mesh["dp"].get_group())
    dist.barrier(group=unused)
# torchtitan shortens every group's timeout after its first step.
for group in (None, mesh["dp"].get_group(), unused):
    dist.distributed_c10d._set_pg_timeout(timedelta(seconds=100), group)
dist.destroy_process_group()
