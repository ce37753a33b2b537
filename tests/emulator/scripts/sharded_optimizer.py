"""Data parallelism with a sharded optimizer, as Megatron-LM's distributed optimizer shards it: the
gradients are reduce-scattered over one flat buffer cut into equal shards, each rank updates the
pieces of the parameters its shard holds, and the parameters are all-gathered back. The shard
boundaries fall inside parameters at other places on each rank, so the ranks update pieces of other
shapes (and rank 0 one piece more): the same collectives, FLOPs and bytes, other kernels.

--wide-last: the last rank also updates a copy of its shard (twice the optimizer bytes there)."""

import sys

import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
layers = [torch.nn.Linear(96, 96) for _ in range(12)] + [torch.nn.Linear(96, 40)]
model = torch.nn.Sequential(*layers).cuda()
params = list(model.parameters())
sizes = [p.numel() for p in params]
total = -(-sum(sizes) // world) * world
shard = total // world
flat_grad = torch.zeros(total, device="cuda")
flat_param = torch.zeros(total, device="cuda")
start, end = rank * shard, (rank + 1) * shard
for step in range(3):
    model(torch.randn(64, 96, device="cuda")).square().mean().backward()
    offset = 0
    for p, n in zip(params, sizes):
        flat_grad[offset:offset + n].copy_(p.grad.view(-1))
        offset += n
    mine = torch.empty(shard, device="cuda")
    dist.reduce_scatter_tensor(mine, flat_grad)
    offset = 0
    for p, n in zip(params, sizes):  # update the pieces of the parameters this rank's shard holds
        lo, hi = max(offset, start), min(offset + n, end)
        if lo < hi:
            flat_param[lo:hi].add_(mine[lo - start:hi - start], alpha=-0.01)
        offset += n
    if "--wide-last" in sys.argv and rank == world - 1:
        flat_param[start:end].clone().mul_(0.5)
    dist.all_gather_into_tensor(flat_param, flat_param[start:end].clone())
    for p in params:
        p.grad = None
