"""A script that raises after one GPU op."""

import torch

x = torch.ones(2, device="cuda")


def broken_helper():
    raise ValueError("the user's own bug")


broken_helper()
