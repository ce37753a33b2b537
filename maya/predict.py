"""Timing of a recorded trace: estimate every op, add host costs, simulate, and summarise."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

log = logging.getLogger(__name__)


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
    """The ten ops with the most simulated GPU time."""
    top_modules: list[dict]
    """The ten modules with the most simulated GPU time."""
    timeline_path: str | None
    """Chrome/Perfetto trace of the simulated timeline."""


def predict(table: pa.Table, gpu: str, trace_dir: str | Path | None = None) -> Prediction:
    """Estimate, simulate and summarise one rank's trace on one GPU of type `gpu`."""
    from maya.estimator.estimate import estimate_trace, source_shares
    from maya.estimator.host_cost import host_costs_us
    from maya.hardware.cluster import cluster_for_gpu
    from maya.simulator import export_chrome_trace, simulate

    df = estimate_trace(table, gpu=gpu)
    df["host_us"] = host_costs_us(df, gpu)
    result = simulate({0: df}, cluster_for_gpu(gpu, world_size=1))
    timeline = None
    if trace_dir is not None:
        timeline = str(export_chrome_trace(result, Path(trace_dir) / "timeline.json"))
    b = result.breakdown[0]
    return Prediction(
        iteration_ms=[t / 1000.0 for t in result.iteration_times_us],
        source_shares={str(k): float(v) for k, v in source_shares(df).items()},
        breakdown={
            "compute_ms": b.compute_us / 1000.0,
            "exposed_comm_ms": b.exposed_comm_us / 1000.0,
            "host_bound_ms": b.host_bound_us / 1000.0,
            "idle_ms": b.idle_us / 1000.0,
        },
        top_ops=_top(result.top_ops, "op"),
        top_modules=_top(result.top_modules, "module"),
        timeline_path=timeline,
    )


def _top(table, key: str, n: int = 10) -> list[dict]:
    return [
        {key: row[key], "gpu_ms": row["total_us"] / 1000.0, "share": row["share"]}
        for row in table.head(n).to_dict("records")
    ]
