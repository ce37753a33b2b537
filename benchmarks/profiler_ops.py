"""Which aten op the PyTorch profiler charges a kernel to, for an op name that Maya's trace records.

The profiler's per-op table (benchmarks/gpu/op_time_probe.py) keys GPU time by the innermost aten
op that launched the kernel, without the overload: `aten::_to_copy` launches through `aten::copy_`,
`aten::convolution` through `aten::cudnn_convolution`. A trace records the op the dispatch mode
saw, with its overload (`aten::add.Tensor`). `profiler_key` maps the second onto the first, so the
two tables can be joined.
"""

from __future__ import annotations

TRACE_TO_PROFILER: dict[str, str] = {
    "aten::_to_copy": "aten::copy_",
    "aten::clone": "aten::copy_",
    "aten::contiguous": "aten::copy_",
    "aten::_scaled_dot_product_cudnn_attention": "aten::_cudnn_attention_forward",
    "aten::_scaled_dot_product_cudnn_attention_backward": "aten::_cudnn_attention_backward",
    "aten::convolution": "aten::cudnn_convolution",
    "aten::relu": "aten::clamp_min",
    "aten::_embedding_bag_backward": "aten::_embedding_bag_dense_backward",
    "aten::zeros": "aten::fill_",
    "aten::zeros_like": "aten::fill_",
    "aten::new_zeros": "aten::fill_",
    "aten::zero_": "aten::fill_",
    "aten::index_put": "aten::_index_put_impl_",
    "aten::index_put_": "aten::_index_put_impl_",
    "aten::arange.start_step": "aten::arange",
}
"""Trace op (with overload, or base name) -> the profiler key its kernels are charged to."""


def profiler_key(trace_op: str) -> str:
    """The profiler's key for one trace op name: `aten::add.Tensor` -> `aten::add`."""
    if trace_op in TRACE_TO_PROFILER:
        return TRACE_TO_PROFILER[trace_op]
    base = trace_op.split(".", 1)[0]
    return TRACE_TO_PROFILER.get(base, base)
