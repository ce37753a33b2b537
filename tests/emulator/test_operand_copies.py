"""Operand copies CUDA implementations make below the dispatcher are recorded (`maya.emulator.operand_copies`)."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn as nn

from maya.emulator.session import EmulationSession
from maya.emulator.state import RankConfig
from maya.hardware.gpu import load_gpu


def _recorded_ops(step) -> list[tuple[str, str]]:
    """(phase, op) of every GPU kernel row that `step()` records on an emulated H200."""
    from maya.emulator.state import ROW_FIELDS

    kind, op, phase = (ROW_FIELDS.index(f) for f in ("kind", "op", "phase"))
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))) as state:
        step()
    return [(str(getattr(row[phase], "value", row[phase])), row[op]) for row in state.rows if str(getattr(row[kind], "value", row[kind])) == "kernel"]


def _copies(ops: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(p, o) for p, o in ops if o in ("aten::clone", "aten::_to_copy", "aten::copy_")]


def test_a_gradient_sliced_by_a_concatenation_is_copied_for_each_of_cudnns_backward_passes():
    # A U-Net's skip connection: the convolution's output goes into torch.cat, so its gradient is a
    # slice of the concatenation's. cuDNN's backward makes it contiguous for the input gradient and
    # again for the weight gradient (ConvShared.cpp): two copies a step, as a real H100 profile of the
    # fp32 U-Net shows (32 `aten::contiguous` under 77 convolution backwards, 16 such convolutions).
    def step():
        conv = nn.Conv2d(8, 8, 3, padding=1).cuda()
        x = torch.randn(2, 8, 16, 16, device="cuda", requires_grad=True)
        torch.cat([conv(x), x], dim=1).sum().backward()

    copies = _copies(_recorded_ops(step))
    assert copies.count(("backward", "aten::clone")) == 2 and all(p == "backward" for p, _ in copies)


def test_a_channels_last_input_converts_a_contiguous_gradient_once():
    # The input suggests channels-last and the gradient does not: cudnn_convolution_backward's
    # `grad_output.to(input.suggest_memory_format())` copies it once (an `aten::_to_copy`), and it is
    # then in the layout both passes take.
    def step():
        conv = nn.Conv2d(8, 8, 1).cuda()
        x = torch.randn(2, 8, 16, 16, device="cuda").to(memory_format=torch.channels_last).requires_grad_()
        y = conv(x)
        (y.contiguous() * 2).sum().backward()

    copies = _copies(_recorded_ops(step))
    assert ("backward", "aten::_to_copy") in copies and ("backward", "aten::clone") not in copies


def test_a_channels_last_input_copies_a_contiguous_weight_every_call():
    # A 3x3 weight left in NCHW under a channels-last input: cuDNN takes it channels-last, so every
    # forward copies it (and the input gradient's pass copies it again).
    def step():
        conv = nn.Conv2d(8, 8, 3, padding=1).cuda()
        x = torch.randn(2, 8, 16, 16, device="cuda").to(memory_format=torch.channels_last)
        conv(x).sum().backward()

    copies = _copies(_recorded_ops(step))
    assert ("forward", "aten::clone") in copies


@pytest.mark.parametrize("layout", [torch.contiguous_format, torch.channels_last])
def test_a_network_in_one_layout_copies_nothing(layout):
    def step():
        net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1, groups=8),
                            nn.Conv2d(8, 4, 1)).cuda().to(memory_format=layout)
        x = (torch.randn(2, 3, 16, 16, device="cuda") if layout is torch.contiguous_format
             else torch.randn(2, 16, 16, 3, device="cuda").permute(0, 3, 1, 2))  # channels-last strides, no copy
        x.requires_grad_()
        net(x).square().sum().backward()  # square's gradient is dense; sum's alone is an expanded scalar

    ops = _recorded_ops(step)
    # The module's own conversion (`.to(memory_format=...)`, outside the step's phases) apart.
    assert [c for c in _copies(ops) if c[0] != "other"] == [] and ("backward", "aten::convolution_backward") in ops


def test_the_expanded_gradient_of_a_plain_sum_is_copied():
    # `conv(x).sum().backward()` hands the convolution a gradient expanded from a scalar (stride 0):
    # not contiguous, so cuDNN's two backward passes each copy it.
    def step():
        conv = nn.Conv2d(8, 8, 3, padding=1).cuda()
        conv(torch.randn(2, 8, 16, 16, device="cuda", requires_grad=True)).sum().backward()

    assert _copies(_recorded_ops(step)) == [("backward", "aten::clone")] * 2



@pytest.mark.parametrize("permuted", [True, False])
def test_layer_norm_copies_a_permuted_input_in_the_forward_and_again_in_the_backward(permuted):
    # A ConvNeXt block normalizes an NCHW activation permuted to NHWC: layer norm's CUDA kernels take
    # `input.expect_contiguous()`, a copy in the forward, and the backward copies the saved input again.
    def step():
        norm = nn.LayerNorm(8).cuda()
        x = torch.randn(2, 8, 4, 4, device="cuda", requires_grad=True)
        norm(x.permute(0, 2, 3, 1) if permuted else x.permute(0, 2, 3, 1).contiguous()).square().sum().backward()

    ops = _recorded_ops(step)
    clones = [p for p, o in ops if o == "aten::clone"]
    assert clones == (["forward", "backward"] if permuted else ["forward"])  # the test's own contiguous() apart
    assert ("backward", "aten::native_layer_norm_backward") in ops


def test_layer_norm_backward_copies_a_strided_output_gradient():
    # The normalized output used through a permutation hands the backward a strided gradient, which
    # its kernel takes contiguous (an H200 profile of torch_transformer_bf16: 8 such copies a step).
    def step():
        norm = nn.LayerNorm(8).cuda()
        x = torch.randn(2, 4, 8, device="cuda", requires_grad=True)
        (norm(x).transpose(1, 2) * torch.randn(2, 8, 4, device="cuda")).sum().backward()

    ops = _recorded_ops(step)
    i = ops.index(("backward", "aten::native_layer_norm_backward"))
    assert ops[i - 1] == ("backward", "aten::clone")
    assert [p for p, o in ops if o == "aten::clone"] == ["backward"]


def test_the_copies_are_marked_as_launched_inside_the_op_and_nothing_else_is():
    from maya.emulator.attrs import INTERNAL_LAUNCH
    from maya.emulator.state import ROW_FIELDS

    op, attrs = ROW_FIELDS.index("op"), ROW_FIELDS.index("attrs")
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))) as state:
        conv = nn.Conv2d(8, 8, 3, padding=1).cuda()
        x = torch.randn(2, 8, 16, 16, device="cuda", requires_grad=True)
        torch.cat([conv(x), x], dim=1).sum().backward()
    marked = [row[op] for row in state.rows if row[attrs] and INTERNAL_LAUNCH in json.loads(row[attrs])]
    assert marked == ["aten::clone", "aten::clone"]
