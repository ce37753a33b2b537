"""`torch._grouped_mm` (mixture-of-experts GEMMs): one kernel for bfloat16 on an H200, CUDA's fallback
(offsets read on the host, one `mm` per group) for float32 or on an A100."""

import pytest
import torch

from maya.emulator.session import EmulationSession
from maya.emulator.state import ROW_FIELDS, RankConfig
from maya.hardware.gpu import load_gpu

OP, INPUTS, KIND, PHASE = (ROW_FIELDS.index(f) for f in ("op", "inputs", "kind", "phase"))


def _step(gpu: str, dtype: torch.dtype, offs_from_python: bool) -> list[tuple]:
    """Rows of one expert layer's forward and backward: 256 tokens over 4 experts of 128 -> 64."""
    with EmulationSession(RankConfig(gpu=load_gpu(gpu))) as state:
        a = torch.randn(256, 128, device="cuda", dtype=dtype, requires_grad=True)
        w = torch.randn(4, 128, 64, device="cuda", dtype=dtype, requires_grad=True)
        if offs_from_python:
            offs = torch.tensor([32, 96, 192, 256], device="cuda", dtype=torch.int32)
        else:  # a router's histogram: values unknown to the emulation
            experts = torch.randn(256, 4, device="cuda").argmax(-1)
            offs = torch.bincount(experts, minlength=4).cumsum(0).to(torch.int32)
        first = len(state.rows)
        out = torch._grouped_mm(a, w, offs=offs)
        assert out.shape == (256, 64) and out.dtype == dtype
        out.pow(2).sum().backward()
        assert a.grad.shape == a.shape and w.grad.shape == w.shape
        return [(str(r[KIND]), r[OP], str(r[PHASE]), r[INPUTS]) for r in state.rows[first:]]


def _mm_rows(rows):
    return [r for r in rows if r[1] == "aten::mm"]


def test_bfloat16_on_an_h200_is_one_grouped_kernel_per_gemm():
    rows = _step("h200", torch.bfloat16, offs_from_python=False)
    assert sum(r[1] == "aten::_grouped_mm" for r in rows) == 3  # forward, input and weight gradients
    assert not _mm_rows(rows)


@pytest.mark.parametrize("gpu, dtype", [("h200", torch.float32), ("a100", torch.bfloat16)])
def test_the_fallback_syncs_and_runs_one_mm_per_group(gpu, dtype):
    rows = _step(gpu, dtype, offs_from_python=True)
    assert not any(r[1] == "aten::_grouped_mm" for r in rows)
    assert sum(r[1] == "cuda:device_to_host" for r in rows) == 3  # the offsets read before each GEMM
    mm = _mm_rows(rows)
    assert len(mm) == 12
    # The offsets are Python data: groups of 32, 64, 96 and 64 tokens.
    assert [r[3][0][0][0] for r in mm[:4]] == [32, 64, 96, 64]


def test_the_fallback_takes_even_groups_when_the_offsets_are_unknown():
    mm = _mm_rows(_step("h200", torch.float32, offs_from_python=False))
    assert [r[3][0][0][0] for r in mm[:4]] == [64, 64, 64, 64]
