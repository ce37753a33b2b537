"""`CollectiveOp`: the NCCL operations Maya prices (shared by the cost model and NCCL's tuning model)."""

from __future__ import annotations

import enum


class CollectiveOp(str, enum.Enum):
    """The NCCL operations the model prices."""

    ALL_REDUCE = "all_reduce"
    ALL_GATHER = "all_gather"
    REDUCE_SCATTER = "reduce_scatter"
    BROADCAST = "broadcast"
    REDUCE = "reduce"
    ALL_TO_ALL = "all_to_all"
    SEND = "send"
    RECV = "recv"
    BARRIER = "barrier"


P2P_OPS = frozenset({CollectiveOp.SEND, CollectiveOp.RECV})
"""Point-to-point operations: matched sender-to-receiver rather than over the whole group."""
