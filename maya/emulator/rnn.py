"""cuDNN RNNs under emulation: nn.LSTM / nn.GRU / nn.RNN record the fused ops a GPU runs.

On a CUDA GPU with cuDNN enabled, `torch._VF.lstm / gru / rnn_tanh / rnn_relu` run `_cudnn_impl`
(aten/src/ATen/native/cudnn/RNN.cpp): one `aten::_cudnn_rnn` for all layers and directions, whose
autograd backward is one `aten::_cudnn_rnn_backward`. The emulated tensors live on a proxy device
that has no such dispatch, so Maya replaces those `_VF` entry points and calls `_cudnn_rnn` itself,
and `EmulatorFakeMode` computes both ops' outputs with `FUSED_RNN_KERNELS` (PyTorch's meta kernel
for `_cudnn_rnn` leaves the reserve empty, and `_cudnn_rnn_backward` has none).

Reproduced from PyTorch (2.11) and what the H200 recorded (benchmarks/gpu/op_timelines_h200/lstm_lm_fp32.json):
- `Module.cuda()` / `.to()` calls `flatten_parameters()`, which puts every weight of a float16 /
  float32 / float64 module in one buffer (`_cudnn_rnn_flatten_weight`); `_cudnn_impl` then passes a
  view of that storage as `weight_buf`. A bfloat16 module is not flattened
  (`torch.backends.cudnn.is_acceptable`), so `_cudnn_rnn` allocates a weight buffer on every call.
- `_cudnn_rnn` returns output, hy, cy, the training reserve (uint8) and weight_buf; the backward
  allocates dx, dhx, dcx and one weight-gradient buffer of weight_buf's size, whose views are the
  weight gradients.
- CUDA autocast's `_cudnn_rnn` kernel (aten/src/ATen/cudnn/AutocastRNN.cpp) casts input, hx and cx
  to float16, whatever the autocast dtype, and copies the weights into a new float16 flat buffer on
  every call, with autograd through the copies.
- Dropout between layers happens inside cuDNN: no `native_dropout` op is recorded.

Approximations: the reserve size is cuDNN's private rule (`cudnnGetRNNTempSpaceSizes`);
`reserve_size_bytes` states the rule used and the one configuration it was checked against. cuDNN's
workspace (freed inside each op) and the cached dropout state are not allocated.
"""

from __future__ import annotations

import torch
from torch import _VF

from maya.emulator.autocast import AutocastState
from maya.emulator.fake_mode import is_emulated_cuda
from maya.emulator.patcher import Patcher
from maya.emulator.rnn_kernels import RnnMode, contiguous_strides

aten = torch.ops.aten

FLATTENED_DTYPES = (torch.float16, torch.float32, torch.float64)
"""Weight dtypes `flatten_parameters` flattens (torch.backends.cudnn.CUDNN_TENSOR_DTYPES)."""

# ---------------------------------------------------------------------------------------------
# The `_VF` entry points and flatten_parameters.


def _flat_buffer(weights: list[torch.Tensor]) -> torch.Tensor | None:
    """A view of the one storage that holds every weight back to back (`try_get_weight_buf`), else None."""
    storage = weights[0].untyped_storage()
    offset = 0
    for w in weights:
        if w.untyped_storage()._cdata != storage._cdata or w.storage_offset() != offset or not w.is_contiguous():
            return None
        offset += w.numel()
    if offset * weights[0].element_size() != storage.nbytes():
        return None
    return torch.empty((0,), dtype=weights[0].dtype, device=weights[0].device).set_(storage, 0, (offset,), (1,))


def _half_flat_copies(weights: list[torch.Tensor]) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Autocast's re-flattening: float16 tensors on one new zeroed buffer, filled by autograd-visible copies.

    Like RNN.cpp's `get_parameters`, each weight is a tensor `set_` onto the buffer's storage, not an
    autograd view of the buffer: its backward is one cast of its gradient back to the weight's dtype.
    """
    buf = torch.zeros((sum(w.numel() for w in weights),), dtype=torch.float16, device=weights[0].device)
    storage = buf.untyped_storage()
    copies = []
    for offset, w in zip(_offsets(weights), weights):
        copy = torch.empty((0,), dtype=torch.float16, device=buf.device).set_(
            storage, offset, w.shape, contiguous_strides(w.shape)
        )
        copy.copy_(w)
        copies.append(copy)
    return buf, copies


def _offsets(weights: list[torch.Tensor]) -> list[int]:
    return [sum(w.numel() for w in weights[:i]) for i in range(len(weights))]


def _run_cudnn(
    mode: RnnMode, autocast: AutocastState, input, batch_sizes, hx, cx, params, has_biases, num_layers,
    dropout, train, bidirectional, batch_first,
):  # fmt: skip
    """`_cudnn_impl`: one `_cudnn_rnn` call; returns (output, hy, cy)."""
    params = list(params)
    hidden_size = hx.shape[2]
    proj_size = 0
    if cx is not None and cx.shape[2] != hx.shape[2]:
        hidden_size, proj_size = cx.shape[2], hx.shape[2]
    weight_stride0 = (4 if has_biases else 2) + (1 if proj_size else 0)
    if autocast.enabled and params[0].is_floating_point() and params[0].dtype is not torch.float64:
        input, hx = autocast.cast(input, torch.float16), autocast.cast(hx, torch.float16)
        cx = autocast.cast(cx, torch.float16) if cx is not None else None
        if params[0].dtype is not torch.float16:
            weight_buf, params = _half_flat_copies(params)
        else:
            weight_buf = _flat_buffer(params)
    else:
        weight_buf = _flat_buffer(params)
    sizes = [] if batch_sizes is None else _host_batch_sizes(batch_sizes)
    output, hy, cy, _reserve, _weight_buf = aten._cudnn_rnn(
        input, params, weight_stride0, weight_buf, hx, cx, int(mode), hidden_size, proj_size, num_layers,
        batch_first, dropout, train, bidirectional, sizes, None,
    )  # fmt: skip
    return output, hy, cy


def _host_batch_sizes(batch_sizes: torch.Tensor) -> list[int]:
    """A packed sequence's batch sizes, which live on the host (pack_padded_sequence's lengths)."""
    if is_emulated_cuda(batch_sizes) or getattr(batch_sizes, "fake_mode", None) is not None:
        raise NotImplementedError(
            "Maya cannot emulate a packed sequence whose batch_sizes are not known on the host; "
            "pass the lengths to pack_padded_sequence as a CPU tensor or list"
        )
    return [int(n) for n in batch_sizes.tolist()]


def _uses_cudnn(input: torch.Tensor, params) -> bool:
    """`at::cudnn_is_acceptable(input)` on a GPU with cuDNN: enabled, a CUDA tensor, not empty."""
    return torch.backends.cudnn.enabled and is_emulated_cuda(input) and input.numel() > 0 and len(params) > 0


def install_rnn(patcher: Patcher, autocast: AutocastState) -> None:
    """Route `_VF.lstm / gru / rnn_tanh / rnn_relu` on emulated CUDA tensors to `_cudnn_rnn`."""
    for name, mode in (
        ("lstm", RnnMode.LSTM), ("gru", RnnMode.GRU), ("rnn_tanh", RnnMode.RNN_TANH), ("rnn_relu", RnnMode.RNN_RELU),
    ):  # fmt: skip
        patcher.set(_VF, name, _cudnn_entry(getattr(_VF, name), mode, autocast))
    patcher.set(torch.nn.RNNBase, "flatten_parameters", _flatten_parameters(torch.nn.RNNBase.flatten_parameters))


def _cudnn_entry(original, mode: RnnMode, autocast: AutocastState):
    """`_VF.lstm / gru / rnn_tanh / rnn_relu`; the LSTM's hidden state is (h, c), the others' one tensor."""

    def rnn(input, *args):
        if type(args[3]) is bool:  # packed: (batch_sizes, hx, params, has_biases, ...); else args[3] is num_layers
            batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional = args
            batch_first = False
        else:
            hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first = args
            batch_sizes = None
        if not _uses_cudnn(input, params):
            return original(input, *args)
        h, c = (hx[0], hx[1]) if mode is RnnMode.LSTM else (hx, None)
        output, hy, cy = _run_cudnn(
            mode, autocast, input, batch_sizes, h, c, params, has_biases, num_layers, dropout, train,
            bidirectional, batch_first,
        )  # fmt: skip
        return (output, hy, cy) if mode is RnnMode.LSTM else (output, hy)

    return rnn


def _flatten_parameters(original):
    """`RNNBase.flatten_parameters` as on a GPU: every weight becomes a view of one buffer."""

    def flatten_parameters(self: torch.nn.RNNBase) -> None:
        weights = self._flat_weights
        if len(weights) != len(self._flat_weights_names) or not all(isinstance(w, torch.Tensor) for w in weights):
            return None
        if not all(is_emulated_cuda(w) for w in weights):
            return original(self)
        dtype = weights[0].dtype
        if not torch.backends.cudnn.enabled or dtype not in FLATTENED_DTYPES or any(w.dtype != dtype for w in weights):
            return None
        if _flat_buffer(weights) is not None:
            return None
        with torch.no_grad():
            buf = torch.empty((sum(w.numel() for w in weights),), dtype=dtype, device=weights[0].device)
            storage = buf.untyped_storage()
            for offset, w in zip(_offsets(weights), weights):
                buf[offset : offset + w.numel()].view(w.shape).copy_(w)
                w.set_(storage, offset, w.shape, contiguous_strides(w.shape))
        return None

    return flatten_parameters

