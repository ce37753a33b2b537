"""Emulations that share a process stay apart (maya.emulator.torch_caches): reused workers rely on it."""

from pathlib import Path

import torch

from maya.world.rank_emulation import emulate_rank

GPT = Path(__file__).parents[2] / "examples" / "train_gpt.py"
TINY_TP_PP = ["--steps", "1", "--seq", "64", "--dim", "64", "--layers", "2", "--heads", "4", "--vocab", "512",
              "--batch", "2", "--tp", "2", "--pp", "2", "--dp", "fsdp", "--accum", "2"]


def test_ranks_of_one_world_emulated_in_turn_in_one_process():
    # Ranks of one world build equal-looking meshes (same rank map and names) over different
    # process groups; without per-emulation mesh identity, a later rank replayed an earlier one's
    # cached DTensor plans (the autograd thread's C++ cache survives clearing):
    # "Could not resolve the process group registered under the name 9".
    first = emulate_rank(str(GPT), TINY_TP_PP, "h100", 0, 8, 8)
    assert first.exit_code == 0, first.error
    for rank in (1, 2, 4):
        result = emulate_rank(str(GPT), TINY_TP_PP, "h100", rank, 8, 8)
        assert result.exit_code == 0, f"rank {rank}: {result.error}"
    again = emulate_rank(str(GPT), TINY_TP_PP, "h100", 0, 8, 8)
    assert again.exit_code == 0, again.error
    assert again.table.equals(first.table)


def test_meshes_outside_an_emulation_are_untouched():
    from torch.distributed.device_mesh import DeviceMesh

    emulate_rank(str(GPT), TINY_TP_PP, "h100", 0, 8, 8)
    assert DeviceMesh.__init__.__module__ == "torch.distributed.device_mesh"
    assert torch.distributed.is_available()
