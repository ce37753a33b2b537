"""CTC loss under emulation: the path PyTorch takes on a CUDA GPU, and the shapes of its outputs.

`torch.ctc_loss` with length tensors (aten/src/ATen/native/LossCTC.cpp) has two paths. For plain
tensors, as on a real GPU, it copies the lengths to the host and calls the int-list overload; that
overload's `_ctc_loss` allocates `log_alpha` as [batch, time, 2 * longest target + 1], and the mean
reduction divides by the target lengths, copied to the GPU. For a tensor subclass (a fake tensor) it
keeps them tensors, and the mean reduction then divides a GPU tensor by host lengths, which fails.
So Maya takes the plain-tensor path itself (`install_ctc_loss`), and gives `_ctc_loss` its outputs
(`ctc_loss_outputs`; fake tensors' own rule refuses them, as the longest target is a value).

Lengths readable on the host are used as they are. Lengths on the (emulated) GPU have no values; the
real step copies them to the host and waits, and Maya records that wait and stands them for every
input using all of `log_probs`' time steps and the targets filling `targets`: each one its padded row
(2-D), or the concatenation shared out evenly (1-D). cuDNN's CTC kernel, which PyTorch picks only for
float32 inputs all of full length with int32 targets on the host, is not modelled: the native kernel
is recorded.
"""

from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import FakeTensor

from maya.emulator.fake_mode import is_emulated_cuda
from maya.emulator.host_tensors import host_ints
from maya.emulator.patcher import Patcher


def placeholder_lengths(log_probs: torch.Tensor, targets: torch.Tensor, input_lengths, target_lengths):
    """(input lengths, target lengths) as int lists: the readable ones, else the placeholders above."""
    batch = log_probs.shape[1] if log_probs.dim() == 3 else 1
    il = host_ints(input_lengths) or [log_probs.shape[0]] * batch
    tl = host_ints(target_lengths)
    if tl is None and targets.dim() == 2:
        tl = [targets.shape[1]] * batch
    elif tl is None:
        share, extra = divmod(targets.shape[0], batch)
        tl = [share + 1] * extra + [share] * (batch - extra)
    return il, tl


def ctc_loss_outputs(log_probs, targets, input_lengths, target_lengths, blank=0, zero_infinity=False):
    """`aten::_ctc_loss` (either overload) of a fake GPU `log_probs`: the per-sequence loss and
    `log_alpha`, as the CUDA kernel allocates them, and whether reading the lengths syncs."""
    batch = log_probs.shape[1] if log_probs.dim() == 3 else 1
    il, tl = placeholder_lengths(log_probs, targets, input_lengths, target_lengths)
    if len(il) != batch or len(tl) != batch:
        raise RuntimeError(f"ctc_loss: expected {batch} input and target lengths (the batch of log_probs "
                           f"{list(log_probs.shape)}), got {len(il)} and {len(tl)}")
    on_gpu = any(isinstance(t, FakeTensor) and t.device.type != "cpu" for t in (input_lengths, target_lengths))
    device = log_probs._fake_device
    loss = torch.empty((batch,), dtype=log_probs.dtype, device=device)
    log_alpha = torch.empty((batch, log_probs.shape[0], 2 * max(tl, default=0) + 1), dtype=log_probs.dtype, device=device)
    return (loss, log_alpha), on_gpu


def install_ctc_loss(patcher: Patcher) -> None:
    """Replace `torch.ctc_loss` (what F.ctc_loss and nn.CTCLoss call) with its plain-tensor path for
    emulated log-probabilities given length tensors."""
    original = torch.ctc_loss

    def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1, zero_infinity=False):
        tensors = isinstance(input_lengths, torch.Tensor) and isinstance(target_lengths, torch.Tensor)
        if not is_emulated_cuda(log_probs) or not tensors:
            return original(log_probs, targets, input_lengths, target_lengths, blank, reduction, zero_infinity)
        for name, lengths in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
            if lengths.is_floating_point() or lengths.is_complex() or lengths.dtype == torch.bool:
                raise RuntimeError(f"{name} must be integral")
        host = [lengths.to("cpu", torch.long) if is_emulated_cuda(lengths) else lengths
                for lengths in (input_lengths, target_lengths)]  # the real step's copy to the host, and its wait
        il, tl = placeholder_lengths(log_probs, targets, *host)
        return original(log_probs, targets, il, tl, blank, reduction, zero_infinity)

    patcher.set(torch, "ctc_loss", ctc_loss)
