"""A pipeline stage built without input_args/output_args (torch.distributed.pipelining infers them).

    torchrun --nproc-per-node 2 pipeline_no_shapes.py
"""

import torch
import torch.distributed as dist
from torch.distributed.pipelining import PipelineStage

dist.init_process_group("nccl")
rank = dist.get_rank()
torch.cuda.set_device(rank)
stage = PipelineStage(torch.nn.Linear(8, 8).cuda(), rank, 2, torch.device("cuda"))
