"""Code that runs on the autograd engine's thread: tensors built from Python data, and FlexAttention."""

from __future__ import annotations

import contextlib
import json

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


@pytest.mark.parametrize("dtype, kernel", [(torch.bfloat16, "flash"), (torch.float32, "efficient")])
def test_compiled_flex_attention_is_one_fused_kernel_each_way(dtype, kernel):
    # Under torch.compile the GPU runs FlexAttention as one Triton kernel forward and one backward,
    # without the score matrix; the dense form had predicted a 4-batch, 4096-token layer at 26.9 GiB.
    flex = pytest.importorskip("torch.nn.attention.flex_attention")
    with emulated() as state:
        q = torch.randn(2, 8, 512, 64, device="cuda", dtype=dtype, requires_grad=True)
        kv = torch.randn(2, 2, 512, 64, device="cuda", dtype=dtype, requires_grad=True)  # grouped-query
        causal = flex.create_block_mask(lambda b, h, m, n: m >= n, None, None, 512, 512, device="cuda")
        compiled = torch.compile(flex.flex_attention)
        first = len(state.rows)
        before = state.allocator.stats.allocated_bytes
        out = compiled(q, kv, kv, block_mask=causal, enable_gqa=True)
        forward_bytes = state.allocator.stats.allocated_bytes - before
        out.float().sum().backward()
        compiled(q, kv, kv, enable_gqa=True)  # no block mask: every score counts
        rows = state.rows[first:]
    assert tuple(out.shape) == (2, 8, 512, 64) and tuple(kv.grad.shape) == (2, 2, 512, 64)
    # The output and its log-sum-exp (and the max-scores buffer), never the 2 x 8 x 512 x 512 scores.
    assert forward_bytes < 2 * 8 * 512 * 512 * 4
    kernels = [(r[OP], json.loads(r[ROW_FIELDS.index("attrs")])) for r in rows if r[KIND] == "kernel"]
    attention = [(op, attrs) for op, attrs in kernels if "attention" in op]
    assert [op for op, _ in attention] == [f"aten::_scaled_dot_product_{kernel}_attention",
                                           f"aten::_scaled_dot_product_{kernel}_attention_backward",
                                           f"aten::_scaled_dot_product_{kernel}_attention"]
    assert "aten::bmm" not in [op for op, _ in kernels]
    causal_arg = {"flash": 4, "efficient": 6}[kernel]  # is_causal's position (a default False is left out)
    assert [attrs["args"][causal_arg:causal_arg + 1] for _, attrs in attention[::2]] == [[True], []]


def test_flex_attention_compiled_with_the_eager_backend_stays_dense():
    flex = pytest.importorskip("torch.nn.attention.flex_attention")
    with emulated() as state:
        q = torch.randn(1, 2, 128, 32, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        first = len(state.rows)
        torch.compile(flex.flex_attention, backend="eager")(q, q, q)
        ops = [r[OP] for r in state.rows[first:] if r[KIND] == "kernel"]
    assert ops.count("aten::bmm") == 2 and not any("attention" in op for op in ops)


def test_flex_attention_in_a_compiled_module_is_fused_and_in_an_eager_one_dense():
    flex = pytest.importorskip("torch.nn.attention.flex_attention")

    class Attention(torch.nn.Module):
        def forward(self, q):
            return flex.flex_attention(q, q, q)

    with emulated() as state:
        q = torch.randn(1, 2, 128, 32, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        runs = {}
        for how in ("torch.compile", "Module.compile", "eager"):
            module = Attention()
            if how == "torch.compile":
                module = torch.compile(module)
            elif how == "Module.compile":
                module.compile()
            first = len(state.rows)
            module(q).sum().backward()
            runs[how] = [r[OP] for r in state.rows[first:] if r[KIND] == "kernel"]
    for how in ("torch.compile", "Module.compile"):
        assert "aten::_scaled_dot_product_flash_attention_backward" in runs[how] and "aten::bmm" not in runs[how]
    assert "aten::bmm" in runs["eager"] and not any("flash" in op for op in runs["eager"])


def test_a_custom_autograd_functions_backward_counts_in_the_module_that_applied_it():
    # Its forward runs with grad off, so no op in it created the node: its backward (FlexAttention's
    # fused kernel, a hand-written fused op) had been counted in no module.
    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    class Inner(torch.nn.Module):
        def forward(self, x):
            return Scale.apply(x)

    class Outer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        def forward(self, x):
            return self.inner(x)

    with emulated() as state:
        x = torch.randn(64, device="cuda", requires_grad=True)
        first = len(state.rows)
        Outer()(x).sum().backward()
        rows = state.rows[first:]
    module = ROW_FIELDS.index("module")
    assert [(r[OP], r[PHASE], r[module]) for r in rows if r[KIND] == "kernel" and r[OP] == "aten::mul.Tensor"] == [
        ("aten::mul.Tensor", "forward", "inner"), ("aten::mul.Tensor", "backward", "inner")]
