"""What a rank knows of the values a collective writes, checked on each rank of two: an all-reduce MAX
or MIN of values the rank knows keeps them (the ranks of a class are alike); a SUM, and what another
rank broadcasts, are unknown (`.item()` gives the integer placeholder 1), except where this rank's own
values are zeros, which stay 0 (a count of problems no rank has, a stop flag no rank raised); a
broadcast's root keeps its own values."""

import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank = dist.get_rank()
flag = torch.tensor([3], device="cuda")
dist.all_reduce(flag, op=dist.ReduceOp.MAX)
scale = torch.tensor([0.5], device="cuda")
dist.all_reduce(scale, op=dist.ReduceOp.MIN)
assert flag.item() == 3 and scale.item() == 0.5, (flag.item(), scale.item())
total = torch.tensor([3], device="cuda")
dist.all_reduce(total)
assert total.item() == 1, total.item()
missing = torch.tensor([0], dtype=torch.int32, device="cuda")
dist.all_reduce(missing)
assert missing.item() == 0, missing.item()
sent = torch.tensor([5 if rank == 0 else -1], device="cuda")
dist.broadcast(sent, src=0)
assert sent.item() == (5 if rank == 0 else 1), (rank, sent.item())
stop = torch.tensor([0], device="cuda")  # Lightning's "received SIGTERM" flag, from rank 0
dist.broadcast(stop, src=0)
assert stop.item() == 0, stop.item()
