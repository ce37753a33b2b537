"""Pipeline stages built without example inputs or outputs: torch.distributed.pipelining infers each
stage's input shapes from the stage before it (objects sent between ranks), as torchtitan's do.
Stage k maps width 16 + 8k to 16 + 8(k + 1), so a stage given another stage's shapes fails.

    torchrun --nproc-per-node 8 pipeline_dynamic_shapes.py --pp 4 [--schedule 1f1b|gpipe|interleaved]
"""

import argparse

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe, ScheduleInterleaved1F1B

parser = argparse.ArgumentParser()
parser.add_argument("--pp", type=int, default=2)
parser.add_argument("--schedule", default="1f1b", choices=["1f1b", "gpipe", "interleaved"])
parser.add_argument("--steps", type=int, default=2)
args = parser.parse_args()

dist.init_process_group("nccl")
world = dist.get_world_size()
torch.cuda.set_device(dist.get_rank() % torch.cuda.device_count())
mesh = init_device_mesh("cuda", (args.pp, world // args.pp), mesh_dim_names=("pp", "dp"))
pp_rank = mesh["pp"].get_local_rank()
per_rank = 2 if args.schedule == "interleaved" else 1
n_stages = args.pp * per_rank
stages = []
for k in (pp_rank + i * args.pp for i in range(per_rank)):
    width_in, width_out = 16 + 8 * k, 16 + 8 * (k + 1)
    module = torch.nn.Sequential(torch.nn.Linear(width_in, 256), torch.nn.GELU(), torch.nn.Linear(256, width_out)).cuda()
    stages.append(PipelineStage(module, k, n_stages, torch.device("cuda"), group=mesh["pp"].get_group()))
schedule_cls = {"1f1b": Schedule1F1B, "gpipe": ScheduleGPipe, "interleaved": ScheduleInterleaved1F1B}[args.schedule]
schedule = schedule_cls(stages if per_rank > 1 else stages[0], n_microbatches=4, loss_fn=lambda out, target: out.float().pow(2).mean())
params = [p for stage in stages for p in stage.submod.parameters()]
optimizer = torch.optim.AdamW(params, lr=1e-3)
for _ in range(args.steps):
    optimizer.zero_grad()
    if pp_rank == 0:
        schedule.step(torch.randn(32, 16, device="cuda"))
    elif pp_rank == args.pp - 1:
        schedule.step(target=torch.randn(32, 16 + 8 * n_stages, device="cuda"))
    else:
        schedule.step()
    optimizer.step()
dist.destroy_process_group()
