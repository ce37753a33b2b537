"""Ops shaped by sequence lengths: packed sequences for RNNs and CTC loss, emulated as a CUDA GPU runs them; and
sparse embedding gradients, which Maya names and refuses."""

from __future__ import annotations

import contextlib

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from maya.emulator.session import EmulationSession
from maya.emulator.state import ROW_FIELDS, RankConfig
from maya.hardware.gpu import load_gpu

KIND, OP, OUTPUTS = (ROW_FIELDS.index(f) for f in ("kind", "op", "outputs"))


@contextlib.contextmanager
def emulated():
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))) as state:
        yield state


def _output_shapes(rows, op: str) -> list[tuple]:
    return [tuple(meta[0] for meta in r[OUTPUTS]) for r in rows if r[OP] == op]


def test_packed_sequence_through_an_lstm_has_the_rows_its_lengths_give():
    lengths = [7, 5, 3]
    with emulated() as state:
        lstm = nn.LSTM(16, 32, bidirectional=True, batch_first=True).cuda()
        x = torch.randn(3, 7, 16, device="cuda", requires_grad=True)
        first = len(state.rows)
        packed = pack_padded_sequence(x, torch.tensor(lengths), batch_first=True)
        assert packed.batch_sizes.tolist() == [3, 3, 3, 2, 2, 1, 1]  # PyTorch's own answer, from the host lengths
        out, _ = lstm(packed)
        padded, out_lengths = pad_packed_sequence(out, batch_first=True)
        padded.sum().backward()
        rows = state.rows[first:]
    assert _output_shapes(rows, "aten::_pack_padded_sequence") == [((15, 16), (7,))]
    assert tuple(padded.shape) == (3, 7, 64) and out_lengths.tolist() == lengths
    assert "aten::_cudnn_rnn" in [r[OP] for r in rows] and "aten::_cudnn_rnn_backward" in [r[OP] for r in rows]
    # The lengths live on the host: packing never waits for the GPU.
    assert not [r for r in rows if r[KIND] == "sync"]
    assert x.grad is not None and tuple(x.grad.shape) == (3, 7, 16)


def test_unsorted_lengths_fail_as_pytorch_says():
    with emulated():
        x = torch.randn(3, 7, 16, device="cuda")
        with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
            pack_padded_sequence(x, torch.tensor([3, 5, 7]), batch_first=True, enforce_sorted=True)
        packed = pack_padded_sequence(x, torch.tensor([3, 5, 7]), batch_first=True, enforce_sorted=False)
        assert tuple(packed.data.shape) == (15, 16)


@pytest.mark.parametrize("as_list", [False, True])
def test_ctc_loss_alpha_is_as_long_as_the_longest_target(as_list):
    il, tl = [50, 40, 30, 20], [12, 10, 7, 3]
    with emulated() as state:
        log_probs = torch.randn(50, 4, 20, device="cuda").log_softmax(-1).requires_grad_()
        targets = torch.randint(1, 20, (4, 12), device="cuda")
        first = len(state.rows)
        lengths = (il, tl) if as_list else (torch.tensor(il), torch.tensor(tl))
        loss = F.ctc_loss(log_probs, targets, *lengths)
        loss.backward()
        rows = state.rows[first:]
    assert _output_shapes(rows, "aten::_ctc_loss") == [((4,), (4, 50, 2 * 12 + 1))]
    assert _output_shapes(rows, "aten::_ctc_loss_backward") == [((50, 4, 20),)]
    assert loss.shape == () and tuple(log_probs.grad.shape) == (50, 4, 20)
    # Host lengths are read without a sync; the mean's copy of them to the GPU is the step's only one.
    assert [r[OP] for r in rows if r[KIND] == "sync"] == ["cuda:host_to_device"]


def test_ctc_loss_lengths_on_the_gpu_wait_for_it_and_fill_the_targets():
    with emulated() as state:
        log_probs = torch.randn(30, 4, 20, device="cuda").log_softmax(-1).requires_grad_()
        first = len(state.rows)
        lengths = torch.full((4,), 30, device="cuda"), torch.full((4,), 9, device="cuda")
        F.ctc_loss(log_probs, torch.randint(1, 20, (4, 9), device="cuda"), *lengths, reduction="sum").backward()
        padded = state.rows[first:]
        first = len(state.rows)
        # 1-D concatenated targets: 22 labels shared out over 4 sequences, the longest 6.
        F.ctc_loss(log_probs, torch.randint(1, 20, (22,), device="cuda"), *lengths, reduction="none").sum().backward()
        concatenated = state.rows[first:]
    assert _output_shapes(padded, "aten::_ctc_loss") == [((4,), (4, 30, 2 * 9 + 1))]
    assert _output_shapes(concatenated, "aten::_ctc_loss") == [((4,), (4, 30, 2 * 6 + 1))]
    for rows in (padded, concatenated):
        assert "cuda:device_to_host" in [r[OP] for r in rows if r[KIND] == "sync"]


def test_ctc_loss_refuses_float_lengths():
    with emulated():
        log_probs = torch.randn(30, 4, 20, device="cuda").log_softmax(-1)
        with pytest.raises(RuntimeError, match="input_lengths must be integral"):
            F.ctc_loss(log_probs, torch.randint(1, 20, (4, 9), device="cuda"), torch.full((4,), 30.0), torch.full((4,), 9))


def test_a_sparse_gradient_is_named_not_left_unrecorded():
    # Embedding(sparse=True): its backward makes a sparse COO gradient, whose ops (and SparseAdam's)
    # Maya does not emulate; they must not pass silently as work the GPU never does.
    from maya.emulator.recorder import UnsupportedOperation

    with emulated():
        emb = nn.Embedding(1000, 16, sparse=True).cuda()
        with pytest.raises(UnsupportedOperation, match="torch.sparse_coo.*Embedding's default"):
            emb(torch.randint(0, 1000, (32,), device="cuda")).sum().backward()
