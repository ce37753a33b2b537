"""Ops without a kernel for the emulated device: PyTorch's host kernel gives their output shapes, and
nn.GRUCell's fused CUDA kernels have Maya's own. Lazy modules, which cannot be on the emulated GPU
before their first forward, are named with the host workaround."""

from __future__ import annotations

import contextlib

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import maya.emulator.recorder as recorder
from maya.emulator.session import EmulationSession
from maya.emulator.state import ROW_FIELDS, RankConfig
from maya.hardware.gpu import load_gpu

OP, PHASE, OUTPUTS = (ROW_FIELDS.index(f) for f in ("op", "phase", "outputs"))


@contextlib.contextmanager
def emulated():
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))) as state:
        yield state


def _outputs(rows, op):
    return [[meta[:2] for meta in r[OUTPUTS]] for r in rows if r[OP] == op]


def test_margin_losses_backward_run_on_host_stand_ins():
    with emulated() as state:
        x = torch.randn(4, 10, device="cuda", requires_grad=True)
        first = len(state.rows)
        F.multi_margin_loss(x, torch.randint(0, 10, (4,), device="cuda")).backward()
        F.multilabel_margin_loss(x, torch.randint(0, 10, (4, 10), device="cuda")).backward()
        rows = state.rows[first:]
        assert x.grad.is_cuda and tuple(x.grad.shape) == (4, 10)
    assert _outputs(rows, "aten::multi_margin_loss_backward") == [[((4, 10), "float32")]]
    assert _outputs(rows, "aten::multilabel_margin_loss_backward") == [[((4, 10), "float32")]]


def test_an_op_too_large_for_the_host_is_named(monkeypatch):
    monkeypatch.setattr(recorder, "HOST_FALLBACK_MAX_NUMEL", 39)
    with emulated():
        x = torch.randn(4, 10, device="cuda", requires_grad=True)
        loss = F.multi_margin_loss(x, torch.randint(0, 10, (4,), device="cuda"))
        with pytest.raises(recorder.UnsupportedOperation, match="Maya cannot emulate aten::multi_margin_loss_backward"):
            loss.backward()


@pytest.mark.parametrize("bias", [True, False])
def test_gru_cell_records_its_fused_kernels(bias):
    with emulated() as state:
        cell = nn.GRUCell(8, 16, bias=bias).cuda()
        x = torch.randn(4, 8, device="cuda", requires_grad=True)
        first = len(state.rows)
        h = cell(x, cell(x, torch.randn(4, 16, device="cuda")))
        h.sum().backward()
        rows = state.rows[first:]
        assert tuple(x.grad.shape) == (4, 8)
        assert (cell.bias_ih is not None and tuple(cell.bias_ih.grad.shape) == (48,)) if bias else cell.bias_ih is None
    assert _outputs(rows, "aten::_thnn_fused_gru_cell") == [[((4, 16), "float32"), ((4, 80), "float32")]] * 2
    backward = _outputs(rows, "aten::_thnn_fused_gru_cell_backward")
    biases = [((48,), "float32")] * 2 if bias else []
    assert backward == [[((4, 48), "float32"), ((4, 48), "float32"), ((4, 16), "float32"), *biases]] * 2


def test_a_lazy_module_on_the_gpu_is_named_and_the_host_workaround_runs():
    with emulated():
        with pytest.raises(RuntimeError, match=r"lazy module.*LazyLinear.weight is uninitialized"):
            nn.Sequential(nn.LazyLinear(10)).cuda()
        with pytest.raises(RuntimeError, match="lazy module.*UninitializedParameter on cuda"):
            nn.LazyLinear(10, device="cuda")
        # The workaround the message gives: one forward on the host, then .cuda().
        model = nn.Sequential(nn.LazyLinear(10))
        model(torch.randn(2, 32))
        model = model.cuda()
        out = model(torch.randn(4, 32, device="cuda"))
        assert out.is_cuda and tuple(model[0].weight.shape) == (10, 32)
