"""CUDA autocast, reproduced in Python.

PyTorch's C++ CUDA autocast kernels abort on a machine without a GPU, so under emulation
`torch.autocast("cuda", ...)` never turns them on. Instead a TorchFunctionMode applies the CUDA
cast policy at the Python API level, above autograd, exactly where autocast's casts sit: the casts
are ordinary autograd-visible `.to(dtype)` calls, and casts of leaf parameters are cached for the
length of the outermost autocast region, as autocast's weight cache does.

The op lists follow `TORCH_LIBRARY_IMPL(aten, AutocastCUDA, m)` in aten/src/ATen/autocast_mode.cpp.
`cross_entropy` is a C++ composite that autocast does not list; inside it PyTorch calls
`log_softmax(input, class_dim, input.dtype)`, whose explicit dtype the fp32_set_opt_dtype policy
keeps, and then `nll_loss`, which is fp32. So under bf16 autocast the log-softmax runs in bf16 and
its output is cast to float32 for the loss, as a real H200 shows
(benchmarks/gpu/op_timelines_h200/gpt2_124m_bf16.json). `_cross_entropy` reproduces that.
"""

from __future__ import annotations

import enum
import inspect
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from maya.emulator.fake_mode import is_emulated_cuda
from maya.emulator.patcher import Patcher


class CastPolicy(enum.Enum):
    """How autocast treats an op's floating-point tensor arguments."""

    LOWER_PRECISION = "lower_precision_fp"
    FP32 = "fp32"
    FP32_SET_OPT_DTYPE = "fp32_set_opt_dtype"
    PROMOTE = "promote"
    CROSS_ENTROPY = "cross_entropy"


LOWER_PRECISION_OPS = (
    "_convolution", "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "convolution", "prelu", "addmm", "addmv", "addr", "matmul", "einsum", "mm", "mv",
    "linalg_vecdot", "linear", "addbmm", "baddbmm", "bmm", "chain_matmul", "linalg_multi_dot",
    "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "scaled_dot_product_attention",
    "__matmul__", "__rmatmul__",
    # Not on autocast's list: a Python composite (nn.MultiheadAttention) whose inner linear, bmm and
    # SDPA calls a TorchFunctionMode cannot reach; casting its inputs once runs them all in the
    # lower precision, as CUDA autocast does.
    "multi_head_attention_forward",
)
FP32_OPS = (
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt",
    "sinh", "tan", "pow", "__pow__", "__rpow__", "softplus", "layer_norm", "group_norm", "frobenius_norm",
    "nuclear_norm", "cosine_similarity", "poisson_nll_loss", "cosine_embedding_loss", "nll_loss",
    "nll_loss2d", "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss",
    "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss",
    "multi_margin_loss", "binary_cross_entropy_with_logits", "dist", "pdist", "cdist", "renorm", "logsumexp",

)
FP32_SET_OPT_DTYPE_OPS = (
    "prod", "softmax", "log_softmax", "cumprod", "cumsum", "linalg_vector_norm", "linalg_matrix_norm", "sum",
)
PROMOTE_OPS = (
    "addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "grid_sampler", "index_put", "tensordot",
    "scatter_add",
)
_NAMESPACES = (torch, torch.Tensor, F, torch._C._nn, torch.linalg, torch._C._linalg, torch.functional)


def _policy_table() -> dict[object, CastPolicy]:
    table: dict[object, CastPolicy] = {}
    table[F.cross_entropy] = CastPolicy.CROSS_ENTROPY
    for names, policy in (
        (LOWER_PRECISION_OPS, CastPolicy.LOWER_PRECISION),
        (FP32_OPS, CastPolicy.FP32),
        (FP32_SET_OPT_DTYPE_OPS, CastPolicy.FP32_SET_OPT_DTYPE),
        (PROMOTE_OPS, CastPolicy.PROMOTE),
    ):
        for name in names:
            for ns in _NAMESPACES:
                fn = getattr(ns, name, None)
                if fn is not None:
                    table[fn] = policy
    return table


@dataclass(slots=True)
class _Region:
    """One entered `torch.autocast("cuda", ...)`."""

    enabled: bool
    dtype: torch.dtype
    cache_enabled: bool
    pushed: bool = False
    """Whether entering this region pushed the mode on this thread's torch-function mode stack."""


class AutocastState:
    """The stack of CUDA autocast regions, and the weight-cast cache of the outermost one."""

    def __init__(self) -> None:
        self.regions: list[_Region] = []
        self.cache: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self.mode = _AutocastMode(self)
        self.table = _policy_table()

    @property
    def enabled(self) -> bool:
        return bool(self.regions) and self.regions[-1].enabled

    @property
    def dtype(self) -> torch.dtype:
        return self.regions[-1].dtype if self.regions else torch.float16

    def enter(self, region: _Region) -> None:
        # Mode stacks are per thread: a region entered on the autograd engine's worker thread (a
        # checkpoint recomputing its forward in backward) pushes the mode there too.
        if self.mode not in torch.overrides._get_current_function_mode_stack():
            self.mode.__enter__()
            region.pushed = True
        self.regions.append(region)

    def exit(self) -> None:
        region = self.regions.pop()
        if region.pushed:
            self.mode.__exit__(None, None, None)
        if not self.regions:
            self.cache.clear()

    def cast(self, t: object, dtype: torch.dtype) -> object:
        """Autocast's `cached_cast`: only floating, non-float64 CUDA tensors are cast."""
        if not (_on_gpu(t) and t.is_floating_point() and t.dtype is not torch.float64 and t.dtype is not dtype):
            return t
        region = self.regions[-1]
        if region.cache_enabled and t.is_leaf and t.requires_grad:
            hit = self.cache.get(id(t))
            if hit is not None and hit[0] is t and hit[1].dtype is dtype:
                return hit[1]
            casted = t.to(dtype)
            self.cache[id(t)] = (t, casted)
            return casted
        return t.to(dtype)


def _on_gpu(t: object) -> bool:
    """A fake CUDA tensor, or a DTensor over one: CUDA autocast casts DTensors too (they carry the
    AutocastCUDA key of their local tensor's device), before DTensor dispatch sees them."""
    from torch.distributed.tensor import DTensor

    if isinstance(t, DTensor):
        t = t._local_tensor
    return is_emulated_cuda(t)


def _map_tensors(fn, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    def one(a: object) -> object:
        if isinstance(a, torch.Tensor):
            return fn(a)
        if isinstance(a, (list, tuple)) and a and isinstance(a[0], torch.Tensor):
            return type(a)(fn(x) for x in a)
        return a

    return tuple(one(a) for a in args), {k: one(v) for k, v in kwargs.items()}


class _AutocastMode(TorchFunctionMode):
    """Applies the CUDA cast policy to each torch function call while autocast is enabled."""

    def __init__(self, state: AutocastState) -> None:
        super().__init__()
        self.state = state

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        state = self.state
        policy = state.table.get(func) if state.enabled else None
        if policy is None:
            return func(*args, **kwargs)
        if policy is CastPolicy.LOWER_PRECISION:
            dtype = state.dtype
            args, kwargs = _map_tensors(lambda t: state.cast(t, dtype), args, kwargs)
        elif policy is CastPolicy.FP32:
            args, kwargs = _map_tensors(lambda t: state.cast(t, torch.float32), args, kwargs)
        elif policy is CastPolicy.CROSS_ENTROPY:
            return _cross_entropy(state, args, kwargs)
        elif policy is CastPolicy.FP32_SET_OPT_DTYPE:
            first = args[0] if args else None
            if kwargs.get("dtype") is None and _on_gpu(first) and first.dtype in (torch.float16, torch.bfloat16):
                kwargs = {**kwargs, "dtype": torch.float32}
        else:
            widest = _widest_dtype(args, kwargs)
            if widest is not None:
                args, kwargs = _map_tensors(lambda t: state.cast(t, widest), args, kwargs)
        return func(*args, **kwargs)


_CROSS_ENTROPY_SIGNATURE = inspect.signature(F.cross_entropy)


def _cross_entropy(state: AutocastState, args: tuple, kwargs: dict) -> torch.Tensor:
    """F.cross_entropy under CUDA autocast: log_softmax in the input's dtype, nll_loss in float32."""
    bound = _CROSS_ENTROPY_SIGNATURE.bind(*args, **kwargs)
    bound.apply_defaults()
    a = bound.arguments
    x, target, weight = a["input"], a["target"], a["weight"]
    if a["label_smoothing"] or target.is_floating_point() or not _on_gpu(x):
        # Probability targets and label smoothing take other composite paths; run them in fp32.
        args, kwargs = _map_tensors(lambda t: state.cast(t, torch.float32), args, kwargs)
        return F.cross_entropy(*args, **kwargs)
    log_probs = torch.log_softmax(x, 0 if x.dim() == 1 else 1, dtype=x.dtype)
    weight = state.cast(weight, torch.float32) if weight is not None else None
    return F.nll_loss(
        state.cast(log_probs, torch.float32), target, weight, ignore_index=a["ignore_index"], reduction=a["reduction"]
    )


def _widest_dtype(args: tuple, kwargs: dict) -> torch.dtype | None:
    widest = None
    for a in (*args, *kwargs.values()):
        items = a if isinstance(a, (list, tuple)) else (a,)
        for t in items:
            if _on_gpu(t) and t.is_floating_point():
                widest = t.dtype if widest is None else torch.promote_types(widest, t.dtype)
    return widest


def install_autocast(patcher: Patcher) -> AutocastState:
    """Route `torch.autocast("cuda")` (and its aliases) to `AutocastState` for this emulation."""
    state = AutocastState()
    autocast_cls = torch.amp.autocast_mode.autocast
    original_enter, original_exit = autocast_cls.__enter__, autocast_cls.__exit__

    def __enter__(self):
        if self.device != "cuda":
            return original_enter(self)
        state.enter(_Region(enabled=self._enabled, dtype=self.fast_dtype, cache_enabled=bool(self._cache_enabled)))
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if self.device != "cuda":
            return original_exit(self, exc_type, exc_val, exc_tb)
        state.exit()
        return False

    patcher.set(autocast_cls, "__enter__", __enter__)
    patcher.set(autocast_cls, "__exit__", __exit__)

    original_is_enabled = torch.is_autocast_enabled
    original_get_dtype = torch.get_autocast_dtype

    def is_autocast_enabled(device_type: str | None = None) -> bool:
        if device_type is None or device_type == "cuda":
            return state.enabled
        return original_is_enabled(device_type)

    def get_autocast_dtype(device_type: str) -> torch.dtype:
        return state.dtype if device_type == "cuda" else original_get_dtype(device_type)

    patcher.set(torch, "is_autocast_enabled", is_autocast_enabled)
    patcher.set(torch, "get_autocast_dtype", get_autocast_dtype)
    patcher.set(torch, "get_autocast_gpu_dtype", lambda: state.dtype)
    patcher.set(torch.amp.autocast_mode, "is_autocast_available", lambda device_type: True)
    return state
