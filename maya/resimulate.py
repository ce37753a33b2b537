"""`simulate_trace_dir`: re-time a stored trace on another cluster, GPU type or network, without emulating again.

    maya simulate TRACE_DIR --cluster dgx-h100 --json summary.json
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from maya.estimator.host_cost import host_profile_figures
from maya.hardware import load_gpu
from maya.hardware.cluster import ClusterSpec, available_clusters, cluster_for_gpu, load_cluster
from maya.predict import predict
from maya.simulator import SimulationParams
from maya.summary import EmulationSummary, IterationSummary
from maya.trace.store import read_meta, read_rank_trace

log = logging.getLogger(__name__)


def simulate_trace_dir(
    trace_dir: str | os.PathLike,
    *,
    cluster: ClusterSpec | str | os.PathLike | None = None,
    gpu: str | None = None,
    timeline_path: str | os.PathLike | None = None,
    samples_per_iteration: int | None = None,
    tokens_per_iteration: int | None = None,
    params: SimulationParams | None = None,
    exact: str | os.PathLike | None = None,
    host_profile: str | os.PathLike | Mapping[str, float] | None = None,
    with_host_speed_range: bool = False,
) -> EmulationSummary:
    """Estimate and simulate the traces of a finished `maya emulate` run on a cluster; same summary shape.

    Example: `maya.simulate_trace_dir("trace", cluster="dgx-h100")`, the library form of
    `maya simulate trace --cluster dgx-h100`.

    Args:
        trace_dir: a complete trace directory (it has meta.json).
        cluster: a `ClusterSpec`, a preset name (`dgx-h100`; presets describe one node and get as
            many nodes as the job needs) or a YAML file path (used as written). Default: the
            DGX-style preset of `gpu`.
        gpu: catalog GPU to predict for when `cluster` is not given; default: the emulated one.
        timeline_path: where to write the Perfetto timeline; default `TRACE_DIR/timeline-<cluster>.json`.
        samples_per_iteration: samples the whole job consumes per iteration (for samples/s).
        tokens_per_iteration: tokens the whole job consumes per iteration (for tokens/s).
        params: host, overlap and NCCL calibration of the simulation.
        exact: op times of this trace measured on a real GPU of the target type (`maya profile
            --trace TRACE_DIR --out DIR`: DIR or DIR/exact.parquet); used before the models.
        host_profile: the host costs of the machine the job will run on (`maya profile --families host
            --out DIR`: DIR or DIR/host_overhead.json, or its `per_op_us` figures already read); its
            per-op figures replace the shipped ones.
        with_host_speed_range: a host-bound prediction also gives the step on a fast and a slow machine
            (`host_speed_range_ms`; `maya.predict.predict`); not with `host_profile`.

    Returns:
        The summary, with `gpu` the cluster's GPU and `emulated_gpu` the one the trace was recorded
        on. Peak memory comes from the trace, i.e. from the emulated GPU's allocator.

    Raises:
        IncompleteTraceError: the directory has no meta.json (the emulation failed or was interrupted).
        TraceSchemaError: the trace was written by an incompatible Maya.
        ValueError: a bad cluster spec, a job that does not fit the cluster, inconsistent meta.json,
            collectives that can never match across ranks, or a host profile without per-op figures.
        FileNotFoundError: `host_profile` does not exist.
    """
    trace_dir = Path(trace_dir)
    host_per_op_us = host_profile_figures(host_profile)
    meta = read_meta(trace_dir)
    world_size = int(meta["world_size"])
    emulated_gpu = str(meta["gpu"])
    emulated_ranks = [int(r) for r in meta["emulated_ranks"]]
    representative = _rank_to_representative(meta, world_size, emulated_ranks)
    spec = _cluster(cluster, gpu, default_gpu=emulated_gpu, world_size=world_size)
    if spec.gpu != emulated_gpu:
        log.warning(
            "the trace was emulated on %s and is predicted for %s: its memory figures come from the %s's "
            "allocator (%.1f GiB), not the %s's (%.1f GiB)", emulated_gpu, spec.gpu, emulated_gpu,
            load_gpu(emulated_gpu).total_memory_bytes / 2**30, spec.gpu, load_gpu(spec.gpu).total_memory_bytes / 2**30,
        )
    tables = {rank: read_rank_trace(trace_dir, rank) for rank in sorted(set(representative.values()))}
    prediction = predict(
        tables, spec.gpu, cluster=spec, rank_to_representative=representative,
        timeline_path=timeline_path if timeline_path is not None else trace_dir / f"timeline-{spec.name}.json",
        params=params, exact=exact, host_per_op_us=host_per_op_us, with_host_speed_range=with_host_speed_range,
    )
    iterations = _iterations(tables[prediction.slowest_rank], prediction.iteration_ms)
    return EmulationSummary(
        world_size=world_size,
        gpu=spec.gpu,
        emulated_ranks=emulated_ranks,
        iterations=iterations,
        oom=False,  # a trace directory is complete only when its emulation did not fail
        trace_dir=str(trace_dir),
        extra={**prediction.summary_extra(), "emulated_gpu": emulated_gpu},
        samples_per_iteration=samples_per_iteration,
        tokens_per_iteration=tokens_per_iteration,
    )


def _rank_to_representative(meta: dict, world_size: int, emulated_ranks: list[int]) -> dict[int, int]:
    """meta.json's `rank_to_representative` (JSON keys are strings), else each emulated rank for itself."""
    raw = meta.get("rank_to_representative")
    if raw is None:
        if sorted(emulated_ranks) != list(range(world_size)):
            raise ValueError(
                f"meta.json: world_size={world_size} but emulated_ranks={emulated_ranks} and no "
                "rank_to_representative says which emulated rank stands for the others"
            )
        return {rank: rank for rank in emulated_ranks}
    representative = {int(rank): int(rep) for rank, rep in raw.items()}
    if len(representative) != world_size:
        raise ValueError(f"meta.json: rank_to_representative has {len(representative)} ranks, world_size={world_size}")
    not_emulated = sorted(set(representative.values()) - set(emulated_ranks))
    if not_emulated:
        raise ValueError(f"meta.json: representative rank(s) {not_emulated} are not in emulated_ranks={emulated_ranks}")
    return representative


def _cluster(cluster: ClusterSpec | str | os.PathLike | None, gpu: str | None, *, default_gpu: str, world_size: int) -> ClusterSpec:
    """The cluster to simulate on: given, a preset scaled to the job, a YAML file, or `gpu`'s preset."""
    if cluster is None:
        spec = cluster_for_gpu(load_gpu(gpu or default_gpu).key, world_size)
    elif isinstance(cluster, ClusterSpec):
        spec = cluster
    elif str(cluster) in available_clusters():
        per_node = load_cluster(cluster).gpus_per_node
        spec = load_cluster(cluster, nodes=max(1, -(-world_size // per_node)))
    else:
        spec = load_cluster(cluster)
    if cluster is not None and gpu is not None and load_gpu(gpu).key != spec.gpu:
        raise ValueError(
            f"gpu={gpu!r} conflicts with cluster {spec.name!r}, whose gpu={spec.gpu!r}; give one of them, "
            "or a cluster YAML with the GPU you want"
        )
    spec.check_world_size(world_size)
    return spec


def _iterations(table: pa.Table, iteration_ms: list[float]) -> list[IterationSummary]:
    """Per-iteration figures from one rank's trace: peaks are the largest allocator totals its rows recorded."""
    columns = table.select(["iteration", "kind", "flops", "allocated_bytes", "reserved_bytes"])
    gpu = pc.is_in(columns["kind"], value_set=pa.array(["kernel", "memcpy"]))
    memory = columns.group_by("iteration").aggregate([("allocated_bytes", "max"), ("reserved_bytes", "max")]).to_pydict()
    work = columns.filter(gpu).group_by("iteration").aggregate([("flops", "sum"), ("flops", "count")]).to_pydict()
    allocated = dict(zip(memory["iteration"], memory["allocated_bytes_max"]))
    reserved = dict(zip(memory["iteration"], memory["reserved_bytes_max"]))
    flops = dict(zip(work["iteration"], work["flops_sum"]))
    ops = dict(zip(work["iteration"], work["flops_count"]))
    return [
        IterationSummary(
            index=index, time_ms=time_ms, peak_allocated_bytes=int(allocated.get(index, 0)),
            peak_reserved_bytes=int(reserved.get(index, 0)), ops=int(ops.get(index, 0)), flops=float(flops.get(index, 0.0)),
        )
        for index, time_ms in enumerate(iteration_ms)
    ]
