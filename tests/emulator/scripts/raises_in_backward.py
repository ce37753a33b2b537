"""Raises inside a backward pass, from a tensor hook (`--where hook`), from a custom autograd
Function's backward (`--where function`), or from an aten backward op Maya cannot emulate (`--where
op`: `multilabel_margin_loss_backward`, which has no fake kernel for the emulated device, with the
host fallback that would run it switched off), all run on the autograd engine's device thread."""

import argparse

import torch

p = argparse.ArgumentParser()
p.add_argument("--where", choices=["hook", "function", "op"], required=True)
where = p.parse_args().where


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        raise ValueError("the function's backward refuses")


def refuse(grad):
    raise ValueError("the hook refuses")


m = torch.nn.Linear(64, 64).cuda()
y = m(torch.randn(8, 64, device="cuda", requires_grad=True))
if where == "hook":
    y.register_hook(refuse)
elif where == "function":
    y = Scale.apply(y)
else:
    import maya.emulator.recorder

    maya.emulator.recorder.HOST_FALLBACK_MAX_NUMEL = 0  # no op runs on host stand-ins
    y = torch.nn.functional.multilabel_margin_loss(y, torch.randint(0, 64, (8, 64), device="cuda"))
y.sum().backward()
print("bwd ok")
