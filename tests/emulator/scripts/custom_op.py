"""Calls a custom op that has a CPU kernel but no fake (meta) implementation, inside a module."""

import torch
import torch.nn as nn

lib = torch.library.Library("userlib", "DEF")
lib.define("scale(Tensor x) -> Tensor")
lib.impl("scale", lambda x: x * 2, "CPU")


class Inner(nn.Module):
    def forward(self, x):
        return torch.ops.userlib.scale(x)


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()

    def forward(self, x):
        return self.inner(x)


Outer()(torch.randn(4, device="cuda"))
