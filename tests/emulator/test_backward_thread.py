"""Code that runs on the autograd engine's thread: tensors built from Python data, and FlexAttention."""

from __future__ import annotations

import contextlib

import pytest
import torch

from maya.emulator.session import EmulationSession
from maya.emulator.state import ROW_FIELDS, RankConfig
from maya.hardware.gpu import load_gpu

KIND, OP, PHASE = (ROW_FIELDS.index(f) for f in ("kind", "op", "phase"))

CONSTRUCTORS = {
    "tensor": lambda g: torch.tensor([1.0, 2.0], device=g.device),
    "tensor_requires_grad": lambda g: torch.tensor([1.0, 2.0], device="cuda", requires_grad=True),
    "as_tensor": lambda g: torch.as_tensor([1.0, 2.0], torch.float16, g.device),
    "asarray": lambda g: torch.asarray([1.0, 2.0], device=g.device),
    "new_tensor": lambda g: g.new_tensor([1.0, 2.0]),
}


@contextlib.contextmanager
def emulated():
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))) as state:
        yield state


@pytest.mark.parametrize("name", sorted(CONSTRUCTORS))
def test_a_custom_backward_builds_gpu_tensors_from_python_data(name):
    made = {}

    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            made["t"] = CONSTRUCTORS[name](grad)  # on the engine's thread
            return grad * 2

    with emulated() as state:
        x = torch.randn(4, 2, device="cuda", requires_grad=True)
        first = len(state.rows)
        Double.apply(x).sum().backward()
        rows = state.rows[first:]
        t = made["t"]
        assert t.device == torch.device("cuda", 0) and tuple(t.shape) == (2,)
    assert t.dtype == (torch.float16 if name == "as_tensor" else torch.float32)
    assert t.requires_grad == (name == "tensor_requires_grad")
    # The host-to-device copy of the data is recorded in the backward, as on the GPU.
    assert ("memcpy", "aten::_to_copy", "backward") in [(r[KIND], r[OP], r[PHASE]) for r in rows]


def test_flex_attention_runs_its_eager_dense_form_forward_and_backward():
    flex = pytest.importorskip("torch.nn.attention.flex_attention")
    with emulated() as state:
        q = torch.randn(2, 4, 256, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        mask = flex.create_block_mask(lambda b, h, m, n: m >= n, 2, 4, 256, 256, device="cuda")
        first = len(state.rows)
        with pytest.warns(UserWarning, match="without torch.compile"):
            out = flex.flex_attention(q, q, q, score_mod=lambda s, b, h, m, n: s + (m - n) * 0.01, block_mask=mask)
        out.float().sum().backward()
        rows = state.rows[first:]
    assert tuple(out.shape) == (2, 4, 256, 64) and out.dtype == torch.bfloat16
    assert tuple(q.grad.shape) == (2, 4, 256, 64)
    kernels = [(r[OP], r[PHASE]) for r in rows if r[KIND] == "kernel"]
    # The full score matrix (Q K^T, then its product with V), its softmax, and in backward the
    # matmuls of the gradients, as PyTorch's unfused form runs them (outside a module: phase "other").
    assert [op for op, phase in kernels if phase != "backward"].count("aten::bmm") == 2
    assert ("aten::_safe_softmax", "other") in kernels
    assert [op for op, phase in kernels if phase == "backward"].count("aten::bmm") >= 4
