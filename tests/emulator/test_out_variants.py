"""`out=` calls are recorded as the functional op the GPU runs (`aten::mm`, not `aten::mm.out`), with
the out tensors left out of the inputs, so that they have FLOPs and the estimator's models know them."""

import torch

from maya.emulator.session import EmulationSession
from maya.emulator.state import ROW_FIELDS, RankConfig
from maya.hardware.gpu import load_gpu
from maya.trace.build import rows_to_table

OP, INPUTS = ROW_FIELDS.index("op"), ROW_FIELDS.index("inputs")


def test_out_variants_are_recorded_as_their_functional_ops():
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))) as state:
        a, b = torch.randn(256, 128, device="cuda"), torch.randn(128, 64, device="cuda")
        out = torch.empty(512, 64, device="cuda")
        first = len(state.rows)
        torch.mm(a, b, out=out[:256])
        torch.sum(a, dim=1, out=torch.empty(256, device="cuda"))
        values, indices = torch.empty(256, device="cuda"), torch.empty(256, device="cuda", dtype=torch.long)
        torch.max(a, dim=1, out=(values, indices))
        rows = [r for r in state.rows[first:] if not r[OP].startswith("aten::empty")]
        plain = len(state.rows)
        torch.mm(a, b)
        mm = state.rows[plain]
    assert [r[OP] for r in rows] == ["aten::mm", "aten::sum.dim_IntList", "aten::max.dim"]
    assert rows[0][INPUTS] == mm[INPUTS] and len(rows[2][INPUTS]) == 1
    table = rows_to_table(rows)
    assert table.column("flops").to_pylist()[0] == 2 * 256 * 128 * 64
