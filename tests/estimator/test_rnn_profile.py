"""The "rnn" profile family: its grid encodes what the emulator records, and its replays run."""

from __future__ import annotations

import json
import math

import pyarrow.parquet as pq
import numpy as np
import pytest
import torch
import torch.nn as nn

from maya.emulator.session import EmulationSession
from maya.emulator.state import ROW_FIELDS, RankConfig
from maya.estimator.families import RNN, family_of
from maya.estimator.profile_grid import CUDA_ONLY_OPS, grid
from maya.estimator.profiler import run_profile
from maya.estimator.replay import build_replay
from maya.emulator.rnn_kernels import RnnMode
from maya.estimator.rnn_grid import MAX_FORWARD_FLOPS, RnnShape, fits
from maya.hardware.gpu import load_gpu

OP, INPUTS, ATTRS = (ROW_FIELDS.index(f) for f in ("op", "inputs", "attrs"))


def _session():
    return EmulationSession(RankConfig(gpu=load_gpu("h200")))


def test_grid_encodes_rnn_calls_as_the_emulator_records_them():
    shape = RnnShape(mode=RnnMode.LSTM, input_size=8, hidden_size=16, num_layers=2, batch=3, steps=5,
                     bidirectional=False, dtype="float32")  # fmt: skip
    forward, backward = grid("rnn", quick=True)[:2]
    assert (forward.op, backward.op) == ("aten::_cudnn_rnn", "aten::_cudnn_rnn_backward")
    with _session() as state:
        m = nn.LSTM(8, 16, 2).cuda()
        x = torch.randn(5, 3, 8, device="cuda", requires_grad=True)
        first = len(state.rows)
        m(x)[0].backward(torch.randn(5, 3, 16, device="cuda"))
        rows = {r[OP]: r for r in state.rows[first:] if "cudnn_rnn" in r[OP]}
    for case in (forward, backward):
        row = rows[case.op]
        assert [meta[0] for meta in row[INPUTS]] == [tuple(s) for s in case.input_shapes]
        recorded = json.loads(row[ATTRS]) if isinstance(row[ATTRS], str) else row[ATTRS]
        assert recorded == case.attrs
    assert shape.forward_flops() == 2 * 15 * (64 * 8 + 64 * 16 + 64 * 16 + 64 * 16)


def test_rnn_replays_build_and_run_on_the_emulated_gpu():
    # _cudnn_rnn has no CPU kernel; the emulated device runs the replay's argument handling (the
    # flat weight buffer, the forward run first for the backward's reserve) with fake tensors.
    with _session():
        for case in grid("rnn", quick=True):
            replay = build_replay(case.op, case.input_shapes, case.input_dtypes, case.input_strides, case.attrs)
            out = replay()
            x_shape = case.input_shapes[0]
            if case.op == "aten::_cudnn_rnn":
                assert out[3].numel() > 0 and out[0].shape[:2] == x_shape[:2]
            else:
                assert tuple(out[0].shape) == x_shape and replay.args[20].numel() > 0
        # A traced LSTM with dropout between layers (the trace records no dropout state).
        backward = grid("rnn", quick=True)[1]
        attrs = {"args": [*backward.attrs["args"][:15], 0.5, *backward.attrs["args"][16:]], "kwargs": {}}
        replay = build_replay(backward.op, backward.input_shapes, backward.input_dtypes, backward.input_strides, attrs)
        assert replay.args[19] is not None
        replay()


def test_cpu_profile_of_the_rnn_family_skips_cuda_only_ops(tmp_path):
    run_profile(tmp_path, families=["rnn"], device="cpu", quick=True)
    assert pq.read_table(tmp_path / "rnn.parquet").num_rows == 0
    assert {"aten::_cudnn_rnn", "aten::_cudnn_rnn_backward"} <= CUDA_ONLY_OPS


def test_full_grid_spans_training_within_its_caps():
    cases = grid("rnn")
    assert 400 <= len(cases) <= 1000  # a few minutes on an H200
    assert {family_of(c.op) for c in cases} == {RNN}
    dtypes = {c.input_dtypes[0] for c in cases}
    assert dtypes == {"float32", "bfloat16", "float16"}
    # Timed as PyTorch runs them by default: cuDNN may use TF32 for float32.
    assert all(c.allow_tf32 == (c.input_dtypes[0] == "float32") for c in cases)
    modes = {c.attrs["args"][6] for c in cases if c.op == "aten::_cudnn_rnn"}
    # ReLU cells time like tanh ones: only the random draws (when the profiler adds them) pick them.
    assert modes >= {int(RnnMode.LSTM), int(RnnMode.GRU), int(RnnMode.RNN_TANH)}
    hidden = {c.attrs["args"][7] for c in cases if c.op == "aten::_cudnn_rnn"}
    assert min(hidden) == 128 and max(hidden) == 4096
    big = RnnShape(mode=RnnMode.LSTM, input_size=4096, hidden_size=4096, num_layers=4, batch=256, steps=1024,
                   bidirectional=True, dtype="float32")  # fmt: skip
    assert big.forward_flops() > MAX_FORWARD_FLOPS and not fits(big)
    assert all(math.prod(c.input_shapes[0]) > 0 for c in cases)


def test_rnn_ops_without_a_fitted_model_fall_back_to_the_roofline(fitted, tmp_path, caplog):
    import logging
    from pathlib import Path

    import maya
    from maya.estimator.estimate import estimate_trace
    from maya.trace import read_rank_trace

    models_dir, report = fitted
    assert RNN not in report.families  # the CPU profiles have no rnn rows
    script = Path(__file__).parents[2] / "benchmarks/validation/workloads/lstm_lm.py"
    argv = ["--batch-size", "4", "--seq-len", "8", "--hidden-size", "64", "--steps", "1", "--warmup", "0"]
    summary = maya.emulate(script, argv, trace_dir=tmp_path / "t")
    assert summary.exit_code == 0, summary.error
    with caplog.at_level(logging.WARNING, logger="maya.estimator.estimate"):
        df = estimate_trace(read_rank_trace(tmp_path / "t", 0), models_dir=models_dir, exact=False)
    rnn = df[df["op"].isin(["aten::_cudnn_rnn", "aten::_cudnn_rnn_backward"])]
    assert len(rnn) == 2 and set(rnn["estimate_source"]) == {"roofline"}
    assert (rnn["duration_us"] > 0).all() and rnn["low_confidence"].all()
    assert any("aten::_cudnn_rnn (1)" in r.getMessage() for r in caplog.records)


def test_rnn_rows_get_cell_depth_and_sequence_features():
    import pyarrow as pa

    from maya.emulator.op_cost import op_cost
    from maya.estimator.features import extract_features, features_for_family

    rows = []
    for case in grid("rnn", quick=True):
        flops, nbytes = op_cost(case.op, case.input_shapes, case.input_dtypes, [], [], case.attrs)
        rows.append({
            "op": case.op, "input_shapes": [list(s) for s in case.input_shapes],
            "input_dtypes": list(case.input_dtypes), "input_strides": [list(s) for s in case.input_strides],
            "output_shapes": [[1]], "output_dtypes": ["float32"], "output_strides": [[1]],
            "attrs": json.dumps(case.attrs), "flops": flops, "bytes": nbytes,
        })  # fmt: skip
    f = extract_features(pa.Table.from_pylist(rows), load_gpu("h200"))
    assert set(features_for_family(RNN)) <= set(f.columns)
    # The quick grid: a 2-layer LSTM (input 8, hidden 16, 5 steps of 3) and a bidirectional GRU (4 steps of 2).
    lstm_backward, gru_forward = f.iloc[1], f.iloc[2]
    assert (lstm_backward["rnn_mode"], lstm_backward["num_layers"], lstm_backward["is_backward"]) == (2, 2, 1)
    assert lstm_backward["log2_hidden"] == 4 and lstm_backward["log2_input_size"] == 3
    assert 2 ** lstm_backward["log2_seq"] == pytest.approx(5) and 2 ** lstm_backward["log2_batch"] == pytest.approx(3)
    assert (gru_forward["rnn_mode"], gru_forward["bidirectional"], 2 ** gru_forward["log2_seq"]) == (3, 1, 4)
    # Cells (steps x layers x directions) run one after another: the RNN model's base time is one
    # microsecond per cell, where every other family's is the roofline.
    from maya.estimator.features import target_base_us

    assert 2 ** lstm_backward["log2_cells"] == pytest.approx(5 * 2) and 2 ** gru_forward["log2_cells"] == pytest.approx(4 * 2)
    assert 2 ** lstm_backward["log2_batch_hidden"] == pytest.approx(3 * 16)
    assert 2 ** lstm_backward["log2_flops_per_cell"] == pytest.approx(2 ** lstm_backward["log2_flops"] / 10)
    assert list(target_base_us(f.iloc[1:3], RNN)) == pytest.approx([10.0, 8.0])
    assert list(target_base_us(f.iloc[1:3], "gemm")) == pytest.approx(list(2 ** f["log2_roofline_us"].iloc[1:3]))
    unreadable = f.iloc[1:2].assign(log2_cells=np.nan)
    assert target_base_us(unreadable, RNN)[0] == pytest.approx(2 ** f["log2_roofline_us"].iloc[1])
