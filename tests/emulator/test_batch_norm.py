"""Batch norm records `cudnn_batch_norm` where a GPU picks cuDNN (the H200's fp32 ResNet-50 did)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
import torch
import torch.nn as nn

from maya.emulator.session import EmulationSession
from maya.emulator.state import ROW_FIELDS, RankConfig
from maya.hardware.gpu import load_gpu

ROOT = Path(__file__).parents[2]
OP = ROW_FIELDS.index("op")


def _norm_ops(module: nn.Module, x_shape, autocast_dtype=None, train: bool = True, channels_last: bool = False):
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))) as state:
        m = module.cuda().train(train)
        x = torch.randn(x_shape, device="cuda", requires_grad=train)
        if channels_last:
            x = x.detach().to(memory_format=torch.channels_last).requires_grad_(train)
        first = len(state.rows)
        ctx = torch.autocast("cuda", dtype=autocast_dtype) if autocast_dtype else contextlib.nullcontext()
        with ctx, torch.set_grad_enabled(train):
            y = m(x)
        if train:
            y.float().sum().backward()
        return [r[OP] for r in state.rows[first:] if "batch_norm" in r[OP]]


def test_fp32_resnet_batch_norm_is_cudnn_as_on_the_h200():
    real = json.loads((ROOT / "benchmarks/gpu/op_timelines_h200/resnet50_fp32.json").read_text())
    gpu_ops = {r["op"] for r in real["rows"] if "batch_norm" in r["op"]}
    assert gpu_ops == {"aten.cudnn_batch_norm.default", "aten.cudnn_batch_norm_backward.default"}
    ops = _norm_ops(nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8)), (2, 3, 8, 8))
    assert ops == ["aten::cudnn_batch_norm", "aten::cudnn_batch_norm_backward"]


@pytest.mark.parametrize(
    "case, expected",
    [
        ("bf16_autocast", "aten::native_batch_norm"),  # bfloat16 input: never cuDNN
        ("fp16_autocast", "aten::cudnn_batch_norm"),  # float16 input with float32 weight: cuDNN
        ("fp32_channels_last", "aten::cudnn_batch_norm"),
        ("two_dim_input", "aten::native_batch_norm"),  # BatchNorm1d on [N, C]: cuDNN needs >= 3 dims
        ("eval_batch_over_65535", "aten::native_batch_norm"),
    ],
)
def test_cudnn_choice_follows_pytorch(case, expected):
    if case == "bf16_autocast":
        ops = _norm_ops(nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8)), (2, 3, 8, 8), torch.bfloat16)
    elif case == "fp16_autocast":
        ops = _norm_ops(nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8)), (2, 3, 8, 8), torch.float16)
    elif case == "fp32_channels_last":
        ops = _norm_ops(nn.BatchNorm2d(8), (2, 8, 4, 4), channels_last=True)
    elif case == "two_dim_input":
        ops = _norm_ops(nn.BatchNorm1d(8), (4, 8))
    else:
        ops = _norm_ops(nn.BatchNorm1d(2), (65536, 2, 1), train=False)
    assert ops[0] == expected
