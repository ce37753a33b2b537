"""Fake kernels of cuDNN's fused RNN ops: the outputs and memory of `_cudnn_rnn` and its backward.

`EmulatorFakeMode` runs these instead of PyTorch's meta kernels: the meta kernel of `_cudnn_rnn`
returns an empty training reserve, and `_cudnn_rnn_backward` has none. Shapes and allocations
follow aten/src/ATen/native/cudnn/RNN.cpp (`_cudnn_rnn`, `_cudnn_rnn_backward_input`,
`_cudnn_rnn_backward_weight`); see `maya/emulator/rnn.py` for when they run.
"""

from __future__ import annotations

import enum

import torch

aten = torch.ops.aten

RESERVE_PADDING_BYTES = 256
"""Bytes the reserve holds beyond `reserve_size_bytes`' per-element rule (H200, cuDNN 9.19)."""


class RnnMode(enum.IntEnum):
    """cudnnRNNMode_t: the `mode` argument of `_cudnn_rnn`."""

    RNN_RELU = 0
    RNN_TANH = 1
    LSTM = 2
    GRU = 3


GATES = {RnnMode.RNN_RELU: 1, RnnMode.RNN_TANH: 1, RnnMode.LSTM: 4, RnnMode.GRU: 3}
"""Gate matrices per cell: weight_ih is [GATES * hidden_size, input_size]."""


def reserve_size_bytes(
    mode: RnnMode,
    *,
    tokens: int,
    batch: int,
    hidden_size: int,
    proj_size: int,
    num_layers: int,
    bidirectional: bool,
    itemsize_bytes: int,
) -> int:
    """Bytes of the training reserve `_cudnn_rnn` returns (saved for the backward).

    Rule: per layer and direction, the gate pre-activations plus the cell output of every step
    ((GATES + 1) * hidden_size per token) and the initial and final states (2 * hidden_size per
    sequence); plus each inner layer's output (directions * out_size per token); plus
    RESERVE_PADDING_BYTES. For the H200's 2-layer fp32 LSTM (T=128, B=64, H=1024, dropout 0.5)
    this gives 370,147,584 bytes, what cuDNN 9.19 allocated; other modes, dtypes and bidirectional
    layouts follow the same rule unmeasured.

    Args:
        tokens: time steps times batch (or the packed sequence's total length).
        batch: sequences in the batch (the first packed batch size).
    """
    directions = 2 if bidirectional else 1
    out_size = proj_size or hidden_size
    per_layer = tokens * (GATES[mode] + 1) * hidden_size + 2 * batch * hidden_size
    between_layers = (num_layers - 1) * tokens * directions * out_size
    return (num_layers * directions * per_layer + between_layers) * itemsize_bytes + RESERVE_PADDING_BYTES


def _sequence_dims(input: torch.Tensor, batch_first: bool, batch_sizes: list[int]) -> tuple[int, int, int]:
    """(time steps, batch, tokens) of an RNN input, packed or padded."""
    if batch_sizes:
        return len(batch_sizes), batch_sizes[0], input.shape[0]
    steps, batch = (input.shape[1], input.shape[0]) if batch_first else (input.shape[0], input.shape[1])
    return steps, batch, steps * batch


def _cudnn_rnn_kernel(
    input, weight, weight_stride0, weight_buf, hx, cx, mode, hidden_size, proj_size, num_layers,
    batch_first, dropout, train, bidirectional, batch_sizes, dropout_state,
):  # fmt: skip
    steps, batch, tokens = _sequence_dims(input, batch_first, batch_sizes)
    directions = 2 if bidirectional else 1
    out_size = proj_size or hidden_size
    device = input.device
    if batch_sizes:
        output = input.new_empty((tokens, directions * out_size))
    else:
        # cuDNN writes [T, B, *]; batch_first returns its transpose (RNN.cpp, `output.transpose_(0, 1)`).
        output = input.new_empty((steps, batch, directions * out_size))
        if batch_first:
            output = output.transpose(0, 1)
    hy = hx.new_empty((num_layers * directions, batch, out_size))
    cy = cx.new_empty((num_layers * directions, batch, hidden_size)) if cx is not None else input.new_empty((0,))
    reserve_bytes = 0
    if train:
        reserve_bytes = reserve_size_bytes(
            RnnMode(mode), tokens=tokens, batch=batch, hidden_size=hidden_size, proj_size=proj_size,
            num_layers=num_layers, bidirectional=bidirectional, itemsize_bytes=input.element_size(),
        )  # fmt: skip
    reserve = torch.empty((reserve_bytes,), dtype=torch.uint8, device=device)
    if weight_buf is None:
        # Weights not in one buffer: RNN.cpp allocates one and copies them in, on every call.
        weight_buf = torch.empty((sum(w.numel() for w in weight),), dtype=input.dtype, device=device)
    return output, hy, cy, reserve, weight_buf


def _cudnn_rnn_backward_kernel(
    input, weight, weight_stride0, weight_buf, hx, cx, output, grad_output, grad_hy, grad_cy, mode,
    hidden_size, proj_size, num_layers, batch_first, dropout, train, bidirectional, batch_sizes,
    dropout_state, reserve, output_mask,
):  # fmt: skip
    dx = torch.empty(input.shape, dtype=input.dtype, device=input.device)
    if batch_first and not batch_sizes:
        dx = torch.empty((input.shape[1], input.shape[0], *input.shape[2:]), dtype=input.dtype, device=input.device)
        dx = dx.transpose(0, 1)
    dhx = torch.empty(hx.shape, dtype=hx.dtype, device=hx.device)
    dcx = torch.empty(cx.shape, dtype=cx.dtype, device=cx.device) if cx is not None else None
    dw: list[torch.Tensor] = []
    if output_mask[3]:
        # One zero-filled buffer the size of weight_buf; each weight's gradient is a view into it.
        numel = weight_buf.numel() if weight_buf is not None else sum(w.numel() for w in weight)
        flat = torch.empty((numel,), dtype=weight[0].dtype, device=input.device)
        offset = 0
        for w in weight:
            dw.append(flat.as_strided(w.shape, contiguous_strides(w.shape), offset))
            offset += w.numel()
    return dx, dhx, dcx, dw


def contiguous_strides(shape: torch.Size) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _cudnn_rnn_flatten_weight_kernel(
    weight_arr, weight_stride0, input_size, mode, hidden_size, proj_size, num_layers, batch_first, bidirectional,
):  # fmt: skip
    """The flat buffer only: on a GPU the op also re-points each weight into it (a `set_`)."""
    numel = sum(w.numel() for w in weight_arr)
    return torch.empty((numel,), dtype=weight_arr[0].dtype, device=weight_arr[0].device)


def _cudnn_init_dropout_state_kernel(
    dropout, train, dropout_seed, *, dtype=None, layout=None, device=None, pin_memory=False
):
    """cuDNN's dropout RNG states; their size (cudnnDropoutGetStatesSize) is not modelled."""
    return torch.empty((0,), dtype=torch.uint8, device=device)


def _fused_gru_cell_kernel(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    """`nn.GRUCell` on CUDA: the new hidden state, and the workspace its backward reads (five
    hidden-sized slices per row), as aten/src/ATen/native/cuda/RNN.cu allocates them; PyTorch has no
    meta kernel for it."""
    workspace = torch.empty((hx.shape[0], hx.shape[1] * 5), dtype=hx.dtype, device=hx.device)
    return torch.empty_like(hx, memory_format=torch.contiguous_format), workspace


def _fused_gru_cell_backward_kernel(grad_hy, workspace, has_bias):
    """The gradients of the input and hidden gates (three hidden widths each), of the previous hidden
    state, and of the two biases (their sums over the batch; none without biases)."""
    rows, hidden = workspace.shape[0], workspace.shape[1] // 5
    gates = [torch.empty((rows, 3 * hidden), dtype=workspace.dtype, device=workspace.device) for _ in range(2)]
    grad_hx = torch.empty_like(grad_hy, memory_format=torch.contiguous_format)
    biases = [torch.empty((3 * hidden,), dtype=workspace.dtype, device=workspace.device) if has_bias else None
              for _ in range(2)]
    return (*gates, grad_hx, *biases)


FUSED_RNN_KERNELS = {
    aten._thnn_fused_gru_cell.default: _fused_gru_cell_kernel,
    aten._thnn_fused_gru_cell_backward.default: _fused_gru_cell_backward_kernel,
    aten._cudnn_rnn.default: _cudnn_rnn_kernel,
    aten._cudnn_rnn_backward.default: _cudnn_rnn_backward_kernel,
    aten._cudnn_rnn_flatten_weight.default: _cudnn_rnn_flatten_weight_kernel,
    aten._cudnn_init_dropout_state.default: _cudnn_init_dropout_state_kernel,
}
"""Fake kernels EmulatorFakeMode runs for these ops instead of PyTorch's meta kernels."""
