"""`scaled_dot_product_attention` under emulation: the fused op the target GPU would run.

PyTorch picks an attention backend per call from the device (aten/src/ATen/native/transformers/
cuda/sdp_utils.cpp). The emulated tensors live on a proxy device, so Maya makes that choice for
the *target* GPU and calls the chosen fused op directly; its autograd formula then records the
matching backward op. Rules reproduced (PyTorch 2.9 and later, cuDNN >= 9.15), checked against a
real H200 with torch 2.11 by benchmarks/gpu/sdpa_backend_probe.py (sdpa_backends_h200.json):
- on compute capability 9.0 and 10.0, cuDNN attention is tried first (`check_prefer_cudnn_attention`),
  then flash, memory-efficient and math; elsewhere flash, memory-efficient, math;
- cuDNN and flash need fp16/bf16 and a head dim <= 256 that is the same for q and v; cuDNN takes
  grouped-query attention and masks, but not a mask that needs a gradient (T5's learned bias),
  which goes to memory-efficient attention;
- flash takes no explicit mask; memory-efficient takes masks, and bf16 only on sm80+;
- every fused backend needs stride 1 in the last dim of q, k, v and the mask
  (`check_last_dim_stride_equals_1_dense`; the CPU build waives it for the mask). T5's relative
  position bias in transformers <= 5.17 is a permuted (1, heads, q, k) view with last-dim stride
  `heads`, so its encoder attention runs on the math backend on a GPU, which upcasts bf16/fp16
  inputs to fp32 and keeps the (batch, heads, q, k) probabilities for backward;
- `torch.backends.cuda.enable_*_sdp(False)` and `sdpa_kernel(...)` switch backends off, as on a GPU.
"""

from __future__ import annotations

import enum

import torch
import torch.nn.functional as F

from maya.emulator.autocast import AutocastState
from maya.emulator.fake_mode import is_emulated_cuda
from maya.emulator.patcher import Patcher

aten = torch.ops.aten
_HALF = (torch.float16, torch.bfloat16)


class Backend(enum.Enum):
    """PyTorch's SDPA backends."""

    CUDNN = "cudnn"
    FLASH = "flash"
    EFFICIENT = "efficient"
    MATH = "math"


def choose_backend(
    capability: tuple[int, int],
    dtype: torch.dtype,
    head_dim_qk: int,
    head_dim_v: int,
    has_mask: bool,
    mask_needs_grad: bool = False,
    last_dim_stride_1: bool = True,
) -> Backend:
    """The backend PyTorch would pick on a GPU of `capability` for one call.

    `last_dim_stride_1` says whether q, k, v and the mask (when there is one) all have stride 1 in
    their last dimension; without it no fused kernel is eligible.
    """
    if not last_dim_stride_1:
        return Backend.MATH
    sm = capability[0] * 10 + capability[1]
    half = dtype in _HALF
    same_dims = head_dim_qk == head_dim_v and head_dim_qk <= 256
    if (
        capability in ((9, 0), (10, 0))
        and torch.backends.cuda.cudnn_sdp_enabled()
        and half
        and same_dims
        and head_dim_qk % 8 == 0
        and not mask_needs_grad
    ):
        return Backend.CUDNN
    if torch.backends.cuda.flash_sdp_enabled() and half and same_dims and not has_mask and 80 <= sm <= 121:
        return Backend.FLASH
    if torch.backends.cuda.mem_efficient_sdp_enabled() and 50 <= sm and (dtype is not torch.bfloat16 or sm >= 80):
        return Backend.EFFICIENT
    return Backend.MATH


def install_sdpa(patcher: Patcher, capability: tuple[int, int], autocast: AutocastState) -> None:
    """Replace F.scaled_dot_product_attention with the target-GPU backend dispatch.

    SDPA is on autocast's lower-precision list; since the replacement is a plain Python function
    the autocast mode does not see, it applies that cast itself.
    """
    original = F.scaled_dot_product_attention

    def scaled_dot_product_attention(
        query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False
    ):
        if not is_emulated_cuda(query):
            return original(query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
        if autocast.enabled:
            dtype = autocast.dtype
            query, key, value = (autocast.cast(t, dtype) for t in (query, key, value))
            if attn_mask is not None and attn_mask.is_floating_point():
                attn_mask = autocast.cast(attn_mask, dtype)
        gqa = enable_gqa and key.shape[-3] != query.shape[-3]
        mask_needs_grad = attn_mask is not None and attn_mask.requires_grad and torch.is_grad_enabled()
        inputs = (query, key, value) if attn_mask is None else (query, key, value, attn_mask)
        backend = choose_backend(
            capability, query.dtype, query.shape[-1], value.shape[-1], attn_mask is not None, mask_needs_grad,
            last_dim_stride_1=all(t.stride(-1) == 1 for t in inputs),
        )
        needs_grad = torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value))
        if backend is Backend.CUDNN:
            bias = _additive_mask(attn_mask, query.dtype)
            return aten._scaled_dot_product_cudnn_attention(
                query, key, value, bias, needs_grad, dropout_p, is_causal, False, scale=scale
            )[0]
        if backend is Backend.FLASH:
            return aten._scaled_dot_product_flash_attention(query, key, value, dropout_p, is_causal, False, scale=scale)[0]
        if gqa:
            # The memory-efficient and math paths expand k/v to the query's heads first.
            repeats = query.shape[-3] // key.shape[-3]
            key = key.repeat_interleave(repeats, dim=-3)
            value = value.repeat_interleave(repeats, dim=-3)
        if backend is Backend.EFFICIENT:
            bias = _additive_mask(attn_mask, query.dtype)
            return aten._scaled_dot_product_efficient_attention(
                query, key, value, bias, needs_grad, dropout_p, is_causal, scale=scale
            )[0]
        return original(query, key, value, attn_mask, dropout_p, is_causal, scale=scale)

    patcher.set(F, "scaled_dot_product_attention", scaled_dot_product_attention)
    patcher.set(torch._C._nn, "scaled_dot_product_attention", scaled_dot_product_attention)


def _additive_mask(mask: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    """A boolean mask becomes an additive 0 / -inf bias in the query dtype (convert_boolean_attn_mask)."""
    if mask is None or mask.dtype is not torch.bool:
        return mask
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(~mask, float("-inf"))
