"""send_object_list from rank 0, recv_object_list on rank 1, which builds a tensor of the shape it got.

    torchrun --nproc-per-node 2 object_p2p.py [--never | --cycle]

--never: rank 0 never sends (rank 1 waits for nothing); --cycle: each rank receives before it sends.
"""

import sys

import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank = dist.get_rank()
if "--cycle" in sys.argv:
    got = [None]
    dist.recv_object_list(got, src=1 - rank)
    dist.send_object_list([rank], dst=1 - rank)
elif rank == 0:
    if "--never" not in sys.argv:
        dist.send_object_list([{"shape": (4, 8)}, "hello"], dst=1)
else:
    received = [None, None]
    sender = dist.recv_object_list(received, src=0)
    assert sender == 0 and received[1] == "hello", (sender, received)
    torch.empty(received[0]["shape"], device="cuda").relu_()
dist.destroy_process_group()
