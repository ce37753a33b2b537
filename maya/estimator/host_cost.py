"""Host-overhead model: the CPU time eager PyTorch spends issuing each traced operation.

The per-category costs come from `host_overhead.json`, measured on the real GPU machine by
`maya profile` (family `host`, see `host_overhead.py`), never from the emulating CPU's own speed.
They apply to every workload alike; `PHASE_COST` says which figure a trace row is charged.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pandas as pd

_DATA = Path(__file__).parent / "data"

PHASE_COST = {
    "forward": "module_forward_op_us",
    "other": "aten_op_us",
    "backward": "autograd_backward_op_us",
    "optimizer": "aten_op_us",
}
"""Trace phase -> host_overhead.json figure charged per kernel/memcpy/collective launch in that phase.
Foreach and fused optimizer ops also pay `optimizer_foreach_per_tensor_us / 3` per tensor in their
lists (the measured slope covers the ~3 list arguments an Adam foreach op walks)."""


@functools.cache
def host_overhead(gpu: str = "h200") -> dict[str, float]:
    """Per-op host costs (microseconds) measured on a real `gpu` machine; the H200's for others."""
    path = _DATA / gpu / "host_overhead.json"
    if not path.exists():
        path = _DATA / "h200" / "host_overhead.json"
    return json.loads(path.read_text())["per_op_us"]


def host_costs_us(df: pd.DataFrame, gpu: str = "h200") -> np.ndarray:
    """CPU time the issuing thread spends on each trace row, microseconds."""
    costs = host_overhead(gpu)
    per_phase = df["phase"].map({p: costs[k] for p, k in PHASE_COST.items()}).fillna(costs["aten_op_us"])
    host = per_phase.to_numpy(dtype=float)
    kind = df["kind"].to_numpy()
    launches = np.isin(kind, ["kernel", "memcpy", "collective"])
    host = np.where(launches, host, np.where(kind == "sync", costs["synchronize_us"], 0.0))
    op = df["op"]
    foreach = (op.str.startswith("aten::_foreach_") | op.str.startswith("aten::_fused_adam")).to_numpy()
    if foreach.any():
        n_tensors = df["input_shapes"].map(len).to_numpy()
        host = np.where(foreach, host + costs["optimizer_foreach_per_tensor_us"] * n_tensors / 3.0, host)
    return host
