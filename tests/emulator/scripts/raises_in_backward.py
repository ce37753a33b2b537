"""Raises inside a backward pass, from a tensor hook (`--where hook`), from a custom autograd
Function's backward (`--where function`), or from an aten backward op Maya cannot emulate (`--where
op`: `multilabel_margin_loss_backward`, which has no fake kernel for the emulated device), all run on
the autograd engine's device thread."""

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
    y = torch.nn.functional.multilabel_margin_loss(y, torch.randint(0, 64, (8, 64), device="cuda"))
y.sum().backward()
print("bwd ok")
