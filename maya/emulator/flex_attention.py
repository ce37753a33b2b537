"""FlexAttention (`torch.nn.attention.flex_attention`) under emulation: what PyTorch runs, eager or compiled.

`flex_attention` and its backward are higher-order operators, which a TorchDispatchMode sees only if
it registers a rule for them; without one the call failed with PyTorch's "no rule registered for
HigherOrderOperator flex_attention and mode Recorder".

- Called outside `torch.compile`, PyTorch runs them as their dense reference implementation
  (`sdpa_dense` and `sdpa_dense_backward` in torch/_higher_order_ops/flex_attention.py: the full
  score matrix, `score_mod` applied with vmap, softmax, then the product with V), and warns that this
  is unfused. Maya's rules run the same implementation, so each of its aten ops is recorded and timed
  as on the GPU.
- Called inside a function or module that `torch.compile` wrapped (torchtitan compiles
  `flex_attention` itself), the GPU runs one fused Triton kernel forward and one backward, which
  never hold the score matrix. Maya runs compiled code eagerly, but a FlexAttention in it is recorded
  as one fused attention kernel each way: PyTorch's FlashAttention op of the same query, key and
  value (`_scaled_dot_product_flash_attention`, whose H200 profiles time it; the memory-efficient
  kernel for float32), causal unless the block mask's `mask_mod` is `noop_mask` (a document or
  sliding-window mask skips at least the blocks a causal one does, so its time is bounded above by
  the causal kernel's). Its outputs, allocations and timing are that kernel's (with grouped-query
  attention, the key's and value's gradients have their own heads, as FlexAttention writes them). How
  close Flash's time comes to FlexAttention's Triton kernels has not been measured on the GPU machines.
"""

from __future__ import annotations

import importlib
from collections import OrderedDict

import torch

from maya.emulator import state as st

_FUSED_MAX = 4096
_FUSED: OrderedDict[tuple, tuple] = OrderedDict()
"""A fused forward's output, by `_key`, -> the kernel's extra outputs that its fused backward takes
(the last `_FUSED_MAX`). Autograd hands the backward a new tensor object of the same storage, so the
key is the storage and the view, not the object."""


def install_flex_attention(mode_type: type) -> None:
    """Give `mode_type` (the recorder) rules for FlexAttention's forward and backward operators, once;
    forget an earlier emulation's fused forwards (their storages' addresses may come again)."""
    _FUSED.clear()
    try:  # the module: the package exports the operator under the same name
        hop = importlib.import_module("torch._higher_order_ops.flex_attention")
    except ImportError:  # a torch without FlexAttention
        return
    rules = ((hop.flex_attention, hop.sdpa_dense, _fused_forward, _compiled),
             (hop.flex_attention_backward, hop.sdpa_dense_backward, _fused_backward, _of_fused_forward))
    for operator, dense, fused, use_fused in rules:
        if mode_type in operator.python_key_table:
            continue

        def rule(mode, *args, _dense=dense, _fused=fused, _use_fused=use_fused, **kwargs):
            with mode:  # the operator's dispatch popped the mode: its ops are to be recorded
                if _use_fused(args):
                    return _fused(*args, **kwargs)
                return _dense(*args, **kwargs)

        operator.py_impl(mode_type)(rule)


def _compiled(args: tuple) -> bool:
    return st.active().compiled_calls > 0


def _key(t: torch.Tensor) -> tuple:
    return (t.untyped_storage()._cdata, t.storage_offset(), tuple(t.shape), t.stride())


def _of_fused_forward(args: tuple) -> bool:
    return _key(args[3]) in _FUSED


def _causal(block_mask: tuple) -> bool:
    """Whether the kernel skips masked blocks: any `mask_mod` but the no-op (the tuple's last item)."""
    from torch.nn.attention.flex_attention import noop_mask

    return bool(block_mask) and block_mask[-1] is not noop_mask


def _fused_forward(query, key, value, score_mod, block_mask, scale, kernel_options,
                   score_mod_other_buffers=(), mask_mod_other_buffers=()):
    """One fused kernel: (out, logsumexp, max_scores) as the operator returns them."""
    causal = _causal(block_mask)
    aten = torch.ops.aten
    if query.dtype in (torch.float16, torch.bfloat16):
        out, lse, *extra = aten._scaled_dot_product_flash_attention(query, key, value, 0.0, causal, False,
                                                                     scale=scale)
        extra = ("flash", causal, *extra[:6])
    else:
        out, lse, seed, offset = aten._scaled_dot_product_efficient_attention(query, key, value, None, True, 0.0,
                                                                            causal, scale=scale)
        extra = ("efficient", causal, seed, offset)
    _FUSED[_key(out)] = extra
    while len(_FUSED) > _FUSED_MAX:
        _FUSED.popitem(last=False)
    return out, lse, torch.empty_like(lse)


def _fused_backward(query, key, value, out, logsumexp, grad_out, grad_logsumexp, fw_graph, joint_graph,
                    block_mask, scale, kernel_options, score_mod_other_buffers=(), mask_mod_other_buffers=()):
    """The fused forward's backward kernel: (grad_query, grad_key, grad_value, no captured-buffer grads)."""
    kind, causal, *extra = _FUSED[_key(out)]
    aten = torch.ops.aten
    if grad_out is None:
        grad_out = torch.zeros_like(out)
    if kind == "flash":
        cum_q, cum_k, max_q, max_k, seed, offset = extra
        dq, dk, dv = aten._scaled_dot_product_flash_attention_backward(
            grad_out, query, key, value, out, logsumexp, cum_q, cum_k, max_q, max_k, 0.0, causal, seed, offset,
            scale=scale)
    else:
        seed, offset = extra
        dq, dk, dv, _ = aten._scaled_dot_product_efficient_attention_backward(
            grad_out, query, key, value, None, out, logsumexp, seed, offset, 0.0, (True, True, True, False),
            causal, scale=scale)
    if dk.shape != key.shape:  # grouped-query attention: the kernel writes the key's and value's heads
        dk, dv = dk.new_empty(key.shape), dv.new_empty(value.shape)
    return dq, dk, dv, tuple(None for _ in score_mod_other_buffers)
