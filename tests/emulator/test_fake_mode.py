"""EmulatorFakeMode's shortcuts (maya/emulator/fake_mode.py) record the same trace as FakeTensorMode's own paths."""

from pathlib import Path

import pytest
from torch._subclasses.fake_tensor import FakeTensorMode

from maya.emulator import fake_mode
from maya.world.rank_emulation import emulate_rank

ROOT = Path(__file__).parents[2]
TINY_GPT = ["--steps", "2", "--seq", "64", "--dim", "64", "--layers", "2", "--heads", "4", "--vocab", "512",
            "--precision", "bf16"]


def test_in_place_foreach_ops_are_recognised():
    import torch

    aten = torch.ops.aten
    assert fake_mode._is_inplace_foreach(aten._foreach_mul_.Scalar)
    assert fake_mode._is_inplace_foreach(aten._foreach_addcdiv_.ScalarList)
    assert not fake_mode._is_inplace_foreach(aten._foreach_mul.Scalar)  # returns new tensors
    assert not fake_mode._is_inplace_foreach(aten.add_.Tensor)  # not foreach
    assert not fake_mode._is_inplace_foreach(aten._foreach_norm.Scalar)


def test_optimizer_step_counters_still_count():
    # The in-place shortcut must leave tensors with a kept value (Adam's CPU step counters) to FakeTensorMode.
    result = emulate_rank(str(ROOT / "tests" / "emulator" / "scripts" / "adam_steps.py"), [], "h100", 0, 1, 1)
    assert result.exit_code == 0, result.error


@pytest.mark.parametrize("script, args", [
    (ROOT / "examples" / "train_gpt.py", TINY_GPT),
    (ROOT / "examples" / "train_gpt.py", [*TINY_GPT, "--dp", "fsdp", "--tp", "2", "--accum", "2"]),
])
def test_shortcuts_record_the_trace_of_fake_tensor_modes_own_paths(monkeypatch, script, args):
    fast = emulate_rank(str(script), args, "h100", 0, 2 if "--tp" in args else 1, 2 if "--tp" in args else 1)
    assert fast.exit_code == 0, fast.error
    monkeypatch.setattr(fake_mode.EmulatorFakeMode, "_prep_args_for_hash", FakeTensorMode._prep_args_for_hash)
    monkeypatch.setattr(fake_mode, "_is_inplace_foreach", lambda func: False)
    slow = emulate_rank(str(script), args, "h100", 0, 2 if "--tp" in args else 1, 2 if "--tp" in args else 1)
    assert slow.exit_code == 0, slow.error
    assert fast.table.num_rows == slow.table.num_rows > 100
    assert fast.table.equals(slow.table)
    assert [(s.peak_allocated_bytes, s.peak_reserved_bytes) for s in fast.iterations] == \
        [(s.peak_allocated_bytes, s.peak_reserved_bytes) for s in slow.iterations]
