"""Every torch.distributed call the fake NCCL group records, once each, with sizes a test can compute.

    torchrun --nproc-per-node 2 collectives.py [--backend nccl|none|cuda:nccl,cpu:gloo]

The script checks on its own what a symmetric program sees (group sizes, object collectives), so a
wrong answer fails the emulated rank.
"""

import argparse

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

p = argparse.ArgumentParser()
p.add_argument("--backend", default="nccl")
args = p.parse_args()

dist.init_process_group(None if args.backend == "none" else args.backend)
rank, world = dist.get_rank(), dist.get_world_size()
assert world == 2 and dist.get_backend() == "nccl", (world, dist.get_backend())
peer = 1 - rank

x = torch.zeros(256, device="cuda")  # 1 KiB of float32
dist.all_reduce(x, op=dist.ReduceOp.MAX)
dist.reduce(x, dst=1)
dist.broadcast(x, src=1)
gathered = [torch.empty(256, device="cuda") for _ in range(world)]
dist.all_gather(gathered, x)
flat = torch.empty(256 * world, device="cuda")
dist.all_gather_into_tensor(flat, x)
dist.reduce_scatter(x, gathered)
dist.reduce_scatter_tensor(x, flat)
chunks_in = [torch.zeros(64, device="cuda") for _ in range(world)]
chunks_out = [torch.empty(64, device="cuda") for _ in range(world)]
dist.all_to_all(chunks_out, chunks_in)
dist.all_to_all_single(torch.empty_like(flat), flat)

# Async work: an unrelated kernel runs before the wait, then the result is read.
y = torch.zeros(1000, device="cuda")  # 4000 bytes
work = dist.all_reduce(y, async_op=True)
unrelated = torch.ones(3, device="cuda") * 7
work.wait()
y.add_(1)

# Waiting under a side stream makes that stream wait, not the default one.
side = torch.cuda.Stream()
z = torch.zeros(500, device="cuda")  # 2000 bytes
work = dist.all_reduce(z, async_op=True)
with torch.cuda.stream(side):
    work.wait()
    z.mul_(2)

# Point-to-point: 16 bf16 elements = 32 bytes per message.
h = torch.zeros(16, dtype=torch.bfloat16, device="cuda")
if rank == 0:
    dist.send(h, dst=1)
    dist.isend(h, dst=1).wait()
    dist.recv(h, src=1)
    dist.irecv(h, src=1).wait()
else:
    dist.recv(h, src=0)
    dist.irecv(h, src=0).wait()
    dist.send(h, dst=0)
    dist.isend(h, dst=0).wait()
ops = [dist.P2POp(dist.isend, h, peer), dist.P2POp(dist.irecv, torch.empty_like(h), peer)]
for w in dist.batch_isend_irecv(ops):
    w.wait()

dist.barrier()

a, b = torch.zeros(10, device="cuda"), torch.zeros(20, device="cuda")
with dist._coalescing_manager(async_ops=True) as cm:
    dist.all_reduce(a)
    dist.all_reduce(b)
cm.wait()

reduced = funcol.all_reduce(torch.ones(8, device="cuda"), "sum", dist.group.WORLD)
doubled = reduced * 2  # reading an AsyncCollectiveTensor waits for it

# Object collectives, used as the torch.distributed docs show: objects of rank-dependent sizes,
# placeholders on the ranks that receive.
mine = {"rank": rank, "name": "r" * (rank + 1)}
objects = [None] * world
dist.all_gather_object(objects, mine)
assert objects == [mine] * world, objects
items = [0, "a"] if rank == 0 else [None, None]
dist.broadcast_object_list(items, src=0)
assert len(items) == 2 and (rank != 0 or items == [0, "a"]), items
gathered_objects = [None] * world if rank == 0 else None
dist.gather_object(mine, gathered_objects, dst=0)
assert rank != 0 or gathered_objects == [mine] * world, gathered_objects
received = [None]
dist.scatter_object_list(received, [{"shard": r} for r in range(world)] if rank == 0 else None, src=0)
assert rank != 0 or received == [{"shard": 0}], received

dist.destroy_process_group()
