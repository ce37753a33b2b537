"""Timing of a recorded trace: estimate every op, add host costs, simulate, and summarise.

Host cost per op comes from `host_overhead.json`, measured on the project's H200 machine by
`maya profile` (never from the emulating CPU's own speed). The per-category figures apply to every
workload alike; `HOST_CALIBRATION` documents how each trace row is charged.
"""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

log = logging.getLogger(__name__)

_DATA = Path(__file__).parent / "estimator" / "data"

HOST_CALIBRATION = {
    "forward": "module_forward_op_us",
    "other": "aten_op_us",
    "backward": "autograd_backward_op_us",
    "optimizer": "aten_op_us",
}
"""Trace phase -> host_overhead.json figure charged per kernel/memcpy launch in that phase.
Foreach optimizer ops also pay `optimizer_foreach_per_tensor_us` per tensor in their lists."""


@functools.cache
def host_overhead(gpu: str = "h200") -> dict[str, float]:
    """Per-op host costs (microseconds) measured on a real `gpu` machine; H200's for others."""
    path = _DATA / gpu / "host_overhead.json"
    if not path.exists():
        path = _DATA / "h200" / "host_overhead.json"
    return json.loads(path.read_text())["per_op_us"]


def host_costs_us(df: pd.DataFrame, gpu: str = "h200") -> np.ndarray:
    """CPU time the issuing thread spends on each trace row, microseconds."""
    costs = host_overhead(gpu)
    per_phase = df["phase"].map({p: costs[k] for p, k in HOST_CALIBRATION.items()}).fillna(costs["aten_op_us"])
    host = per_phase.to_numpy(dtype=float)
    kind = df["kind"].to_numpy()
    launches = np.isin(kind, ["kernel", "memcpy", "collective"])
    host = np.where(launches, host, np.where(kind == "sync", costs["synchronize_us"], 0.0))
    foreach = df["op"].str.startswith("aten::_foreach_").to_numpy() | df["op"].str.startswith("aten::_fused_adam").to_numpy()
    if foreach.any():
        n_tensors = df["input_shapes"].map(len).to_numpy()
        host = np.where(foreach, host + costs["optimizer_foreach_per_tensor_us"] * n_tensors / 3.0, host)
    return host


@dataclass(frozen=True, kw_only=True, slots=True)
class Prediction:
    """Predicted timing of one emulated run."""

    iteration_ms: list[float]
    """Predicted wall time of each iteration, milliseconds."""
    source_shares: dict[str, float]
    """Share of predicted GPU time per estimate source (exact, catboost, roofline, ...)."""
    breakdown: dict[str, float]
    """Rank 0's compute / exposed communication / host-bound / idle time, milliseconds."""
    top_ops: list[dict]
    """The ten ops with the most predicted GPU time."""
    timeline_path: str | None
    """Chrome/Perfetto trace of the simulated timeline."""


def predict(table: pa.Table, gpu: str, trace_dir: str | Path | None = None) -> Prediction:
    """Estimate, simulate and summarise one rank's trace on one GPU of type `gpu`."""
    from maya.estimator.estimate import estimate_trace, source_shares
    from maya.hardware.cluster import cluster_for_gpu
    from maya.simulator import export_chrome_trace, simulate

    df = estimate_trace(table, gpu=gpu)
    df["host_us"] = host_costs_us(df, gpu)
    result = simulate({0: df}, cluster_for_gpu(gpu, world_size=1))
    timeline = None
    if trace_dir is not None:
        timeline = str(export_chrome_trace(result, Path(trace_dir) / "timeline.json"))
    b = result.breakdown[0]
    ops = df[df["kind"] == "kernel"].groupby("op")["duration_us"].sum().sort_values(ascending=False).head(10)
    return Prediction(
        iteration_ms=[t / 1000.0 for t in result.iteration_times_us],
        source_shares={str(k): float(v) for k, v in source_shares(df).items()},
        breakdown={
            "compute_ms": b.compute_us / 1000.0,
            "exposed_comm_ms": b.exposed_comm_us / 1000.0,
            "host_bound_ms": b.host_bound_us / 1000.0,
            "idle_ms": b.idle_us / 1000.0,
        },
        top_ops=[{"op": op, "gpu_ms": us / 1000.0} for op, us in ops.items()],
        timeline_path=timeline,
    )
