"""Convolution outputs on the emulated GPU take cuDNN's layout (channels-last in, channels-last out)."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn as nn

from maya.emulator.session import EmulationSession
from maya.emulator.state import RankConfig
from maya.hardware.gpu import load_gpu


def _conv_out(weight_cl: bool, input_cl: bool, dtype=torch.float32, dims: int = 2):
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))):
        conv = (nn.Conv2d(8, 16, 3, padding=1) if dims == 2 else nn.Conv3d(8, 16, 3, padding=1)).cuda().to(dtype)
        shape = (4, 8, 16, 16) if dims == 2 else (2, 8, 6, 6, 6)
        x = torch.randn(shape, device="cuda", dtype=dtype, requires_grad=True)
        layout = torch.channels_last if dims == 2 else torch.channels_last_3d
        if weight_cl:
            conv = conv.to(memory_format=layout)
        if input_cl:
            x = x.detach().to(memory_format=layout).requires_grad_()
        y = conv(x)
        y.sum().backward()
        return y, x.grad, layout


@pytest.mark.parametrize("weight_cl, input_cl", [(True, True), (True, False), (False, True)])
def test_channels_last_input_or_weight_gives_channels_last_output(weight_cl, input_cl):
    y, grad, layout = _conv_out(weight_cl, input_cl)
    assert y.is_contiguous(memory_format=layout) and not y.is_contiguous()
    # The input's .grad keeps the input's own layout (AccumulateGrad's layout contract).
    assert grad.is_contiguous(memory_format=layout if input_cl else torch.contiguous_format)


def test_contiguous_convolution_stays_contiguous():
    y, grad, _ = _conv_out(False, False)
    assert y.is_contiguous() and grad.is_contiguous()


def test_channels_last_3d_and_float64_follow_cudnn():
    y, _, layout = _conv_out(True, True, dims=3)
    assert y.is_contiguous(memory_format=layout) and not y.is_contiguous()
    y64, _, _ = _conv_out(True, True, dtype=torch.float64)
    assert y64.is_contiguous()  # cuDNN's rule: no channels-last for double


@pytest.mark.parametrize("benchmark", [True, False])
def test_convolutions_record_whether_cudnn_autotunes_them(benchmark):
    # Under torch.backends.cudnn.benchmark cuDNN times its algorithms and runs the fastest, so the
    # estimator must know: the forward and backward convolution rows carry the flag, other rows never.
    from maya.emulator.attrs import CUDNN_BENCHMARK
    from maya.emulator.state import ROW_FIELDS

    op, attrs = ROW_FIELDS.index("op"), ROW_FIELDS.index("attrs")
    before = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = benchmark
    try:
        with EmulationSession(RankConfig(gpu=load_gpu("h200"))) as state:
            conv = nn.Conv2d(8, 16, 3, padding=1).cuda()
            conv(torch.randn(4, 8, 16, 16, device="cuda")).relu().sum().backward()
    finally:
        torch.backends.cudnn.benchmark = before
    marked = {row[op] for row in state.rows if row[attrs] and CUDNN_BENCHMARK in json.loads(row[attrs])}
    assert marked == ({"aten::convolution", "aten::convolution_backward"} if benchmark else set())
