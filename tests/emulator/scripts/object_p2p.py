"""send_object_list from rank 0, recv_object_list on rank 1.

    torchrun --nproc-per-node 2 object_p2p.py
"""

import torch.distributed as dist

dist.init_process_group("nccl")
if dist.get_rank() == 0:
    dist.send_object_list([{"shape": (4, 8)}, "hello"], dst=1)
else:
    received = [None, None]
    dist.recv_object_list(received, src=0)
dist.destroy_process_group()
