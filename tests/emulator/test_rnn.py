"""nn.LSTM / nn.GRU / nn.RNN on the emulated GPU record cuDNN's fused ops, as an H200 runs them."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
import torch
import torch.nn as nn

import maya
from maya.emulator.rnn_kernels import RnnMode, reserve_size_bytes
from maya.emulator.session import EmulationSession
from maya.emulator.state import ROW_FIELDS, RankConfig
from maya.hardware.gpu import load_gpu
from maya.trace import read_rank_trace

ROOT = Path(__file__).parents[2]
OP, PHASE, INPUTS, OUTPUTS = (ROW_FIELDS.index(f) for f in ("op", "phase", "inputs", "outputs"))


@contextlib.contextmanager
def emulated():
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))) as state:
        yield state


def _step(state, module: nn.Module, x: torch.Tensor, autocast: bool = False) -> list[tuple]:
    """One forward and backward of `module` on `x`; the rows it recorded."""
    first = len(state.rows)
    ctx = torch.autocast("cuda", dtype=torch.bfloat16) if autocast else contextlib.nullcontext()
    with ctx:
        out = module(x)[0]
    out.float().sum().backward()
    return state.rows[first:]


def _ops(rows) -> list[str]:
    return [r[OP] for r in rows]


def _row(rows, op: str) -> tuple:
    (row,) = [r for r in rows if r[OP] == op]
    return row


@pytest.mark.parametrize(
    "cls, kwargs, mode",
    [
        (nn.LSTM, {}, RnnMode.LSTM),
        (nn.GRU, {"bidirectional": True}, RnnMode.GRU),
        (nn.RNN, {"nonlinearity": "relu", "batch_first": True}, RnnMode.RNN_RELU),
        (nn.RNN, {"nonlinearity": "tanh", "bias": False}, RnnMode.RNN_TANH),
    ],
)
def test_rnn_records_one_fused_forward_and_backward(cls, kwargs, mode):
    seq, batch, inp, hidden, layers = 7, 3, 16, 32, 2
    batch_first = kwargs.get("batch_first", False)
    directions = 2 if kwargs.get("bidirectional") else 1
    with emulated() as state:
        m = cls(inp, hidden, layers, dropout=0.25, **kwargs).cuda()
        x = torch.randn((batch, seq, inp) if batch_first else (seq, batch, inp), device="cuda")
        rows = _step(state, m, x)
        grads_on_gpu = [p.grad is not None and p.grad.is_cuda for p in m.parameters()]
    ops = _ops(rows)
    assert ops.count("aten::_cudnn_rnn") == 1 and ops.count("aten::_cudnn_rnn_backward") == 1
    # No CPU decomposition: no per-step matmuls, cells or dropout between layers.
    assert not {"aten::mm", "aten::addmm", "aten::native_dropout"} & set(ops)
    assert not any("cell" in op for op in ops)
    fwd = _row(rows, "aten::_cudnn_rnn")
    output, hy, cy, reserve, weight_buf = fwd[OUTPUTS]
    assert output[0] == ((batch, seq, directions * hidden) if batch_first else (seq, batch, directions * hidden))
    assert hy[0] == (layers * directions, batch, hidden)
    assert cy[0] == ((layers * directions, batch, hidden) if mode is RnnMode.LSTM else (0,))
    expected = reserve_size_bytes(
        mode, tokens=seq * batch, batch=batch, hidden_size=hidden, proj_size=0, num_layers=layers,
        bidirectional=directions == 2, itemsize_bytes=4,
    )  # fmt: skip
    assert reserve[0] == (expected,) and reserve[1] == "uint8"
    assert weight_buf[0] == (sum(p.numel() for p in m.parameters()),)
    bwd = _row(rows, "aten::_cudnn_rnn_backward")
    assert bwd[OUTPUTS][0][0] == tuple(x.shape)
    assert all(grads_on_gpu)


def test_lstm_with_projection():
    with emulated() as state:
        m = nn.LSTM(16, 32, 2, proj_size=8, bidirectional=True).cuda()
        rows = _step(state, m, torch.randn(6, 4, 16, device="cuda"))
    output, hy, cy = (meta[0] for meta in _row(rows, "aten::_cudnn_rnn")[OUTPUTS][:3])
    assert (output, hy, cy) == ((6, 4, 16), (4, 4, 8), (4, 4, 32))
    assert "aten::_cudnn_rnn_backward" in _ops(rows)


def test_packed_sequence_with_host_batch_sizes():
    with emulated() as state:
        m = nn.GRU(16, 32, 1).cuda()
        # A PackedSequence of 4 sequences of lengths 6, 5, 3, 2: 16 tokens.
        batch_sizes = torch.tensor([4, 4, 3, 2, 2, 1])
        packed = nn.utils.rnn.PackedSequence(torch.randn(16, 16, device="cuda"), batch_sizes)
        first = len(state.rows)
        out, h = m(packed)
        assert out.data.shape == (16, 32) and h.shape == (1, 4, 32)
        rows = state.rows[first:]
    assert _row(rows, "aten::_cudnn_rnn")[OUTPUTS][0][0] == (16, 32)


def test_pack_padded_sequence_packs_the_host_lengths():
    # More in test_sequence_ops.py; lengths copied from the GPU have no values: every sequence full.
    with emulated():
        x = torch.randn(6, 4, 16, device="cuda")
        assert nn.utils.rnn.pack_padded_sequence(x, [6, 5, 3, 2]).batch_sizes.tolist() == [4, 4, 3, 2, 2, 1]
        from_gpu = nn.utils.rnn.pack_padded_sequence(x, torch.full((4,), 6, device="cuda"))
        assert from_gpu.batch_sizes.tolist() == [4] * 6 and tuple(from_gpu.data.shape) == (24, 16)


def test_autocast_runs_the_lstm_in_float16():
    # AutocastRNN.cpp casts to float16 whatever the autocast dtype, and re-flattens the weights.
    with emulated() as state:
        m = nn.LSTM(16, 32, 1).cuda()
        rows = _step(state, m, torch.randn(5, 2, 16, device="cuda"), autocast=True)
        assert m.weight_ih_l0.grad.dtype is torch.float32
    fwd = _row(rows, "aten::_cudnn_rnn")
    assert {meta[1] for meta in fwd[INPUTS]} == {"float16"}
    assert [meta[1] for meta in fwd[OUTPUTS]] == ["float16", "float16", "float16", "uint8", "float16"]
    assert {meta[1] for meta in _row(rows, "aten::_cudnn_rnn_backward")[OUTPUTS]} == {"float16"}


@pytest.mark.parametrize("allow", [True, False])
def test_float32_rnn_rows_record_cudnn_tf32_permission(allow):
    # cuDNN runs float32 RNNs on TF32 tensor cores unless torch.backends.cudnn.allow_tf32 is off; the
    # estimator reads the flag from the row (an H200 LSTM: 14.1 ms with TF32, 30.5 ms without).
    before = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = allow
    try:
        with emulated() as state:
            rows = _step(state, nn.LSTM(16, 32, 1).cuda(), torch.randn(5, 2, 16, device="cuda"))
    finally:
        torch.backends.cudnn.allow_tf32 = before
    tf32 = ROW_FIELDS.index("allow_tf32")
    assert _row(rows, "aten::_cudnn_rnn")[tf32] is allow
    assert _row(rows, "aten::_cudnn_rnn_backward")[tf32] is allow


def test_reserve_is_held_until_backward_and_freed_after():
    seq, batch, hidden = 64, 32, 256
    reserve = reserve_size_bytes(
        RnnMode.LSTM, tokens=seq * batch, batch=batch, hidden_size=hidden, proj_size=0, num_layers=1,
        bidirectional=False, itemsize_bytes=4,
    )  # fmt: skip
    with emulated():
        m = nn.LSTM(hidden, hidden, 1).cuda()
        x = torch.randn(seq, batch, hidden, device="cuda")
        with torch.no_grad():
            before = torch.cuda.memory_allocated()
            m.eval()
            out_eval = m(x)[0]
            eval_growth = torch.cuda.memory_allocated() - before
            del out_eval
        m.train()
        before = torch.cuda.memory_allocated()
        out = m(x)[0]
        train_growth = torch.cuda.memory_allocated() - before
        out.sum().backward()
    # Training keeps the reserve alive with the graph; inference allocates none.
    assert train_growth - eval_growth >= reserve


def test_flatten_parameters_puts_weights_in_one_buffer():
    with emulated():
        m = nn.GRU(16, 32, 2).cuda()
        storages = {p.untyped_storage()._cdata for p in m.parameters()}
        total = sum(p.numel() for p in m.parameters()) * 4
        assert len(storages) == 1 and m.weight_ih_l0.untyped_storage().nbytes() == total


def test_lstm_language_model_matches_the_h200_reserve(tmp_path):
    """The validation workload, smaller: its recorded reserve follows the rule checked on the H200."""
    real = json.loads((ROOT / "benchmarks/gpu/op_timelines_h200/lstm_lm_fp32.json").read_text())
    measured = next(r for r in real["rows"] if r["op"] == "aten._cudnn_rnn.default")["out"][3][0][0]
    assert measured == reserve_size_bytes(
        RnnMode.LSTM, tokens=128 * 64, batch=64, hidden_size=1024, proj_size=0, num_layers=2,
        bidirectional=False, itemsize_bytes=4,
    )  # fmt: skip
    script = ROOT / "benchmarks/validation/workloads/lstm_lm.py"
    argv = ["--batch-size", "4", "--seq-len", "8", "--hidden-size", "64", "--steps", "1", "--warmup", "1"]
    summary = maya.emulate(script, argv, trace_dir=tmp_path / "t")
    assert summary.exit_code == 0, summary.error
    table = read_rank_trace(tmp_path / "t", 0).to_pandas()
    ops = table.op.tolist()
    assert ops.count("aten::_cudnn_rnn") == 2 and ops.count("aten::_cudnn_rnn_backward") == 2
    assert "aten::_thnn_fused_lstm_cell" not in ops


def test_rnn_flops_count_every_weight_matrix_once_per_token():
    from maya.emulator.op_cost import op_cost

    # The H200 workload's 2-layer LSTM: T=128, B=64, H=1024; four 4096x1024 matrices.
    seq, batch, hidden = 128, 64, 1024
    weights = [(4 * hidden, hidden), (4 * hidden, hidden), (4 * hidden,), (4 * hidden,)] * 2
    ins = [(seq, batch, hidden), *weights]
    attrs = {"args": [{"$t": 0}, [{"$t": i + 1} for i in range(len(weights))], 4]}
    forward_flops = 2 * seq * batch * 4 * (4 * hidden * hidden)
    flops, nbytes = op_cost("aten::_cudnn_rnn", ins, ["float32"] * len(ins), [], [], attrs)
    assert flops == forward_flops and nbytes == 4 * sum(torch.Size(s).numel() for s in ins)
    assert op_cost("aten::_cudnn_rnn_backward", ins, ["float32"] * len(ins), [], [], attrs)[0] == 2 * forward_flops
