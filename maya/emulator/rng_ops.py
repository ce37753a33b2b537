"""DTensor's random ops under emulation: the higher-order operator that wraps them runs the op itself.

From torch 2.13 a random op on a DTensor (`normal_`, `uniform_`, dropout: what torchtitan's
`init_weights` and any sharded dropout run) reaches its local shard through the higher-order operator
`run_dtensor_rng_op(start_offset, end_offset, op, *args)`, which moves the CUDA generator's Philox
offset around `op` so that every rank draws its own part of one random stream. A TorchDispatchMode
sees the operator only through a rule registered for it; without one the call failed with
PyTorch's "no rule registered for HigherOrderOperator run_dtensor_rng_op and mode Recorder". The
offsets choose which random numbers the shard holds, which fake tensors do not have, and cost no GPU
time, so the rule runs `op` alone, under the recorder: one kernel, as on the GPU.
"""

from __future__ import annotations

import importlib


def install_rng_ops(mode_type: type) -> None:
    """Give `mode_type` (the recorder) a rule for `run_dtensor_rng_op`, once; a torch without it is left as is."""
    try:
        prims = importlib.import_module("torch._prims.rng_prims")
    except ImportError:
        return
    operator = getattr(prims, "run_dtensor_rng_op", None)
    if operator is None or mode_type in operator.python_key_table:
        return

    def rule(mode, start_offset_incr, end_offset_incr, op, *args, **kwargs):
        with mode:  # the operator's dispatch popped the mode: the op is to be recorded
            return op(*args, **kwargs)

    operator.py_impl(mode_type)(rule)
