"""FSDP2 with bf16 parameters on linears whose rows do not divide by the world size (padded shards).

    torchrun --nproc-per-node 2 fsdp_padding.py [--keep-unsharded] [--host-model [--host-grads]]

Blocks model[0] = Linear(5, 3) and model[2] = Linear(3, 7) are wrapped; the root holds model[3] = Linear(7, 5).
"""

import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

p = argparse.ArgumentParser()
p.add_argument("--keep-unsharded", action="store_true", help="reshard_after_forward=False for the blocks")
p.add_argument("--host-model", action="store_true", help="shard the model built on the host: fully_shard moves it")
p.add_argument("--host-grads", action="store_true", help="with --host-model: its parameters hold host gradients (zeroed)")
args = p.parse_args()

dist.init_process_group("nccl")
mesh = init_device_mesh("cuda", (dist.get_world_size(),))
model = nn.Sequential(nn.Linear(5, 3), nn.ReLU(), nn.Linear(3, 7), nn.Linear(7, 5))
model = model if args.host_model else model.cuda()
if args.host_grads:
    model(torch.randn(4, 5)).sum().backward()
    model.zero_grad(set_to_none=False)
mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
for block in (model[0], model[2]):
    fully_shard(block, mesh=mesh, mp_policy=mp, reshard_after_forward=not args.keep_unsharded)
fully_shard(model, mesh=mesh, mp_policy=mp)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    model(torch.randn(4, 5, device="cuda")).sum().backward()
    opt.step()
    opt.zero_grad()
dist.destroy_process_group()
