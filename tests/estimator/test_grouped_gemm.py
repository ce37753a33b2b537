"""Mixture-of-experts grouped GEMMs: their FLOPs, and their estimate as the batched GEMM they amount to."""

from __future__ import annotations

import torch

from maya.emulator.op_cost import op_cost
from maya.emulator.session import EmulationSession
from maya.emulator.state import RankConfig
from maya.estimator.estimate import estimate_trace
from maya.estimator.grouped_gemm import _as_bmm
from maya.hardware.gpu import load_gpu
from maya.trace.build import rows_to_table


def test_grouped_gemm_flops_count_each_group_once():
    # Forward: 1024 rows of K=256 over 8 experts' [256, 1024] weights.
    assert op_cost("aten::_grouped_mm", [(1024, 256), (8, 256, 1024), (8,)], ["bfloat16"] * 2 + ["int32"],
                   [(1024, 1024)], ["bfloat16"], {})[0] == 2 * 1024 * 256 * 1024
    # Weight gradient: [256, T=1024] x [1024, 512] -> [8, 256, 512]; each expert its own 128 rows of T.
    assert op_cost("aten::_grouped_mm", [(256, 1024), (1024, 512), (8,)], ["bfloat16"] * 2 + ["int32"],
                   [(8, 256, 512)], ["bfloat16"], {})[0] == 2 * 256 * 1024 * 512


def test_grouped_gemm_maps_to_the_bmm_of_its_groups():
    shapes, strides, out = _as_bmm([[1024, 256], [8, 256, 1024], [8]], [[256, 1], [262144, 1, 256], [1]])
    assert shapes == [[8, 128, 256], [8, 256, 1024]] and out == [8, 128, 1024]
    assert strides == [[128 * 256, 256, 1], [262144, 1, 256]]  # the weight's transpose kept
    shapes, strides, out = _as_bmm([[256, 1024], [1024, 512], [8]], [[1, 256], [512, 1], [1]])
    assert shapes == [[8, 256, 128], [8, 128, 512]] and out == [8, 256, 512]
    assert strides == [[128 * 256, 1, 256], [128 * 512, 512, 1]]
    assert _as_bmm([[4, 8]], [[8, 1]]) is None


def test_a_grouped_gemm_is_estimated_as_its_batched_gemm_by_the_gemm_model():
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))) as state:
        x = torch.randn(1024, 256, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(8, 1024, 256, device="cuda", dtype=torch.bfloat16).transpose(1, 2)  # [8, 256, 1024]
        offs = torch.arange(128, 1025, 128, device="cuda", dtype=torch.int32)
        first = len(state.rows)
        torch._grouped_mm(x, w, offs)
        torch.bmm(x.view(8, 128, 256), w)
        rows = state.rows[first:]
    table = rows_to_table(rows)
    est = estimate_trace(table)
    grouped, bmm = est[est.op == "aten::_grouped_mm"].iloc[0], est[est.op == "aten::bmm"].iloc[0]
    assert grouped.estimate_source == bmm.estimate_source == "catboost"
    # The same GEMM; only the bytes feature differs (the grouped call also reads its offsets).
    assert bmm.duration_us > 0 and abs(grouped.duration_us / bmm.duration_us - 1) < 0.01
