"""FlexAttention (`torch.nn.attention.flex_attention`) under emulation: what eager PyTorch runs.

`flex_attention` and its backward are higher-order operators, which a TorchDispatchMode sees only if
it registers a rule for them; without one the call failed with PyTorch's "no rule registered for
HigherOrderOperator flex_attention and mode Recorder". Called outside `torch.compile`, PyTorch runs
them as their dense reference implementation (`sdpa_dense` and `sdpa_dense_backward` in
torch/_higher_order_ops/flex_attention.py: the full score matrix, `score_mod` applied with vmap,
softmax, then the product with V), and warns that this is unfused. Maya's rules run the same
implementation, so each of its aten ops is recorded and timed as on the GPU. Under `torch.compile`
the GPU would run one fused Triton kernel instead; Maya runs compiled code eagerly (with a warning),
so a compiled FlexAttention is predicted as its unfused eager form.
"""

from __future__ import annotations

import importlib


def install_flex_attention(mode_type: type) -> None:
    """Give `mode_type` (the recorder) rules for FlexAttention's forward and backward operators, once."""
    try:  # the module: the package exports the operator under the same name
        hop = importlib.import_module("torch._higher_order_ops.flex_attention")
    except ImportError:  # a torch without FlexAttention
        return
    for operator, dense in ((hop.flex_attention, hop.sdpa_dense), (hop.flex_attention_backward, hop.sdpa_dense_backward)):
        if mode_type in operator.python_key_table:
            continue

        def rule(mode, *args, _dense=dense, **kwargs):
            with mode:  # the operator's dispatch popped the mode: its dense ops are to be recorded
                return _dense(*args, **kwargs)

        operator.py_impl(mode_type)(rule)
