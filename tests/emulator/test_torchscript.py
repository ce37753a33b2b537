"""TorchScript under emulation: scripted code that calls a torch function Maya replaces still compiles."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.jit._builtins import _find_builtin, _get_builtin_table

from maya.emulator.session import EmulationSession
from maya.emulator.state import ROW_FIELDS, RankConfig
from maya.hardware.gpu import load_gpu

OP = ROW_FIELDS.index("op")


def test_scripted_code_calling_replaced_builtins_compiles_and_is_recorded():
    original_tensor = torch.tensor
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))) as state:
        assert torch.tensor is not original_tensor and _find_builtin(torch.tensor) == "aten::tensor"

        # As DeBERTa-v2's helpers: scripted while Maya's torch.tensor and group_norm stand in.
        @torch.jit.script
        def scaled(x: torch.Tensor, scale: float) -> torch.Tensor:
            return x * torch.tensor(scale, dtype=x.dtype, device=x.device)

        @torch.jit.script
        def normed(x: torch.Tensor) -> torch.Tensor:
            return F.group_norm(x, 2)

        first = len(state.rows)
        y = normed(scaled(torch.randn(4, 8, 16, device="cuda"), 0.5))
        ops = [r[OP] for r in state.rows[first:]]
        assert y.is_cuda and tuple(y.shape) == (4, 8, 16)
    assert "aten::mul.Tensor" in ops and "aten::native_group_norm" in ops
    assert torch.tensor is original_tensor and _find_builtin(torch.tensor) == "aten::tensor"
    # The replacements are no longer builtins once put back.
    names = list(_get_builtin_table().values())
    assert names.count("aten::tensor") == 1 and names.count("aten::group_norm") == 1
