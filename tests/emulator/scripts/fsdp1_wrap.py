"""FSDP1 (`FullyShardedDataParallel`) wrapping each residual block of a small MLP stack, bf16 mixed
precision, AdamW, gradient clipping, 2 steps.

    torchrun --nproc-per-node 2 fsdp1_wrap.py {device-id,cuda-first} [all-wrapped] [full-state-dict[-offload]]
        [sharded-state-dict]

`device-id`: the model is built on the host and FSDP moves it (`device_id=torch.cuda.current_device()`,
the documented form); `cuda-first`: the model is moved with `.cuda()` before wrapping. `all-wrapped`:
no head, so the root FSDP instance holds no parameter of its own (auto-wrapping took them all).
`full-state-dict`: then a full state dict on rank 0 (`offload_to_cpu` with `-offload`);
`sharded-state-dict`: each rank's sharded state dict (ShardedTensors, which ask c10d for the group's device).
"""

import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import MixedPrecision
from torch.distributed.fsdp.wrap import ModuleWrapPolicy

WIDTH, BLOCKS = 256, 4


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(WIDTH, 4 * WIDTH)
        self.down = nn.Linear(4 * WIDTH, WIDTH)

    def forward(self, x):
        return x + self.down(torch.relu(self.up(x)))


dist.init_process_group("nccl")
torch.cuda.set_device(dist.get_rank() % torch.cuda.device_count())
head = [] if "all-wrapped" in sys.argv[2:] else [nn.Linear(WIDTH, 10)]
model = nn.Sequential(*[Block() for _ in range(BLOCKS)], *head)
placement = {"device_id": torch.cuda.current_device()} if sys.argv[1] == "device-id" else {}
model = FSDP(model if placement else model.cuda(), auto_wrap_policy=ModuleWrapPolicy({Block}), use_orig_params=True,
             mixed_precision=MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.float32), **placement)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for _ in range(2):
    loss = model(torch.randn(32, WIDTH, device="cuda")).float().pow(2).mean()
    loss.backward()
    model.clip_grad_norm_(1.0)
    opt.step()
    opt.zero_grad()
if any(flag.startswith("full-state-dict") for flag in sys.argv[2:]):
    from torch.distributed.fsdp import FullStateDictConfig, StateDictType

    config = FullStateDictConfig(offload_to_cpu="full-state-dict-offload" in sys.argv[2:], rank0_only=True)
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, config):
        state = model.state_dict()
    assert len(state) == (2 * 2 * BLOCKS if dist.get_rank() == 0 else 0), len(state)
if "sharded-state-dict" in sys.argv[2:]:
    from torch.distributed.fsdp import StateDictType

    with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
        assert len(model.state_dict()) == 2 * 2 * BLOCKS
