"""Process groups created in Megatron-LM's order (`initialize_model_parallel`) for tensor 2 x data 2 x
pipeline 2 on 8 ranks (rank = tp + 2 * dp + 4 * pp): each data-parallel group with a Gloo twin, the
tensor-parallel groups, each pipeline group followed by its embedding and position-embedding groups,
the model-parallel groups, and a group of every rank last. A stage's layer sizes depend on the
pipeline stage alone, so the ranks of one stage record the same trace."""

import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank = dist.get_rank()
tp_rank, dp_rank, pp_rank = rank % 2, rank // 2 % 2, rank // 4


def mine(groups):
    """Create every group (as every rank must), and return the one holding this rank."""
    out = None
    for ranks, backend in groups:
        group = dist.new_group(ranks, backend=backend)
        if rank in ranks:
            out = group
    return out


dp_group = mine([(r, b) for tp in range(2) for pp in range(2) for r in [[tp + 2 * dp + 4 * pp for dp in range(2)]]
                 for b in ("nccl", "gloo")])
tp_group = mine([([2 * i, 2 * i + 1], "nccl") for i in range(4)])
mine([(r, None) for start in range(4) for r in ([start, start + 4], [start, start + 4], [start])])
mine([([0, 1, 4, 5], None), ([2, 3, 6, 7], None)])
mine([(list(range(8)), None)])

width = 64 if pp_rank == 0 else 96
layer = torch.nn.Linear(width, width).cuda()
for step in range(2):
    out = layer(torch.randn(8, width, device="cuda"))
    dist.all_reduce(out, group=tp_group)
    out.sum().backward()
    dist.all_reduce(layer.weight.grad, group=dp_group)
