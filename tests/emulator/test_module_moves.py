"""Moving a module to the emulated GPU: optimizers made before the move follow its parameters."""

from __future__ import annotations

import torch
import torch.nn as nn

from maya.emulator.session import EmulationSession
from maya.emulator.state import ROW_FIELDS, RankConfig
from maya.hardware.gpu import load_gpu


def test_an_optimizer_made_before_the_model_moves_steps_the_moved_parameters():
    # On a GPU, `Module.cuda()` swaps each parameter's data in place, so an optimizer built before it
    # steps the GPU parameters; Maya rebuilds the parameters and points such optimizers at them.
    kind, op, phase = ROW_FIELDS.index("kind"), ROW_FIELDS.index("op"), ROW_FIELDS.index("phase")
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))) as state:
        model = nn.Sequential(nn.Linear(64, 64), nn.Linear(64, 64))
        opt = torch.optim.AdamW(model.parameters(), foreach=True)
        opt.add_param_group({"params": [nn.Parameter(torch.zeros(3))]})  # not the model's: left alone
        model.to(torch.bfloat16).cuda()
        assert opt.param_groups[0]["params"] == list(model.parameters()) and not opt.param_groups[1]["params"][0].is_cuda
        model(torch.randn(8, 64, device="cuda", dtype=torch.bfloat16)).sum().backward()
        opt.param_groups.pop()
        first = len(state.rows)
        opt.step()
        steps = [r[op] for r in state.rows[first:] if r[kind] == "kernel" and r[phase] == "optimizer"]
    assert any(o.startswith("aten::_foreach_") for o in steps), steps


def test_an_optimizer_made_after_the_move_from_parameters_taken_before_it_gets_the_moved_ones():
    # accelerate's DummyOptim keeps `model.parameters()` from before DeepSpeed moves the model.
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))):
        model = nn.Sequential(nn.Linear(64, 64), nn.Linear(64, 64))
        taken, named = list(model.parameters()), list(model.named_parameters())
        model.cuda()
        model.to(torch.bfloat16)
        moved = list(model.parameters())
        assert torch.optim.SGD(taken, lr=0.1).param_groups[0]["params"] == moved
        assert torch.optim.AdamW([{"params": taken[:2]}, {"params": taken[2:], "lr": 0.0}]).param_groups[1]["params"] == moved[2:]
        assert torch.optim.AdamW(named).param_groups[0]["params"] == moved
        assert all(p.is_cuda and p.dtype is torch.bfloat16 for p in moved)


def test_a_parameter_moved_twice_on_the_gpu_frees_its_first_copy():
    # `model.cuda()` then `.to(torch.bfloat16)`: the float32 copy is freed, as on a GPU, even while a
    # list taken before the moves holds the host parameters.
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))):
        model = nn.Linear(1024, 1024, bias=False)
        taken = list(model.parameters())
        model.cuda()
        model.to(torch.bfloat16)
        assert torch.cuda.memory_allocated() == 1024 * 1024 * 2
        assert torch.optim.SGD(taken, lr=0.1).param_groups[0]["params"] == [model.weight]
