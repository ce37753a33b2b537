"""Rank 0 broadcasts flags it knows; the others start from zeros and act on what they receive
(Megatron broadcasts its "train, validate, test" flags so).

    torchrun --nproc-per-node 2 broadcast_flags.py
"""

import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank = dist.get_rank()
torch.cuda.set_device(rank)
if rank == 0:
    flags = torch.tensor([1, 0, 1], dtype=torch.long, device="cuda")
else:
    flags = torch.tensor([0, 0, 0], dtype=torch.long, device="cuda")
dist.broadcast(flags, 0)
do_train, do_valid, do_test = flags.tolist()
x = torch.randn(64, 64, device="cuda")
if do_train:
    x = x @ x
if do_valid:
    x = x.relu()
if do_test:
    x = x.sigmoid()
dist.destroy_process_group()
