"""`predict`: time recorded traces on a cluster: estimate every op, add host costs, simulate, summarise."""

from __future__ import annotations

import os
import statistics
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa

from maya.estimator.collective import calibrated_overlap_slowdown, calibrated_params
from maya.estimator.estimate import estimate_trace, one_unmodelled_warning, source_shares
from maya.estimator.exact_table import ExactTable
from maya.estimator.host_cost import (
    graph_kernel_gap_us,
    host_costs_us,
    host_speed_range,
    kernel_gap_us,
    launch_stream_us,
    marked_rows,
)
from maya.estimator.model_set import load_model_set, resolve_models_dir
from maya.hardware.cluster import ClusterSpec, cluster_for_gpu
from maya.simulator import RankBreakdown, SimulationParams, SimulationResult, export_chrome_trace, simulate
from maya.summary import HOST_BOUND_SHARE
from maya.throughput import model_flops_per_iteration
from maya.trace import Phase

TOP_N = 10
"""How many ops and modules `Prediction.top_ops` / `top_modules` keep."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Prediction:
    """Predicted timing of one job: its iterations, where the time went and the timeline file."""

    iteration_ms: list[float]
    """Predicted wall time of each iteration (the slowest rank's), milliseconds."""
    source_shares: dict[str, float]
    """Share of predicted GPU time per estimate source (exact, catboost, roofline, ...), all ranks."""
    breakdown: dict[str, float]
    """The slowest rank's compute / exposed communication / host-bound / idle time over the whole
    simulated run, milliseconds (keys `compute_ms`, `exposed_comm_ms`, `host_bound_ms`, `idle_ms`)."""
    slowest_rank: int
    """The representative rank whose total time is largest: the one `breakdown` describes."""
    rank_breakdowns: list[dict]
    """Per representative rank, in rank order: `rank`, `members` (ranks it stands for) and its
    `total_ms`, `compute_ms`, `exposed_comm_ms`, `host_bound_ms`, `idle_ms`, `comm_ms`."""
    top_ops: list[dict]
    """The `TOP_N` ops with the most simulated GPU time over all ranks: `op`, `kind`, `gpu_ms`, `share`."""
    top_modules: list[dict]
    """The `TOP_N` modules with the most simulated GPU time over all ranks, repeated layers summed: `module`,
    `instances`, `gpu_ms`, `share`."""
    gpu_ms_by_phase: dict[str, float]
    """Simulated GPU time per phase of the step over all ranks, milliseconds, in `maya.trace.Phase`'s
    order; counted as `top_ops` is."""
    from_iteration: int
    """The first iteration `breakdown`, `rank_breakdowns`, `top_ops`, `top_modules` and `source_shares`
    count (`SimulationResult.from_iteration`): 1 leaves the first iteration's set-up out whenever
    later iterations exist."""
    model_flops_per_iteration: list[float]
    """FLOPs of each iteration over every rank of the job (`maya.throughput.model_flops_per_iteration`)."""
    world_size: int
    """Ranks in the job."""
    cluster: ClusterSpec
    """Where the job was simulated."""
    timeline_path: str | None
    """Chrome/Perfetto trace of the simulated timeline (opens in ui.perfetto.dev); None if not written."""
    host_speed_range_ms: tuple[float, float] | None = None
    """A host-bound job's median iteration time on a fast and on a slow machine of the GPU's kind
    (`maya.estimator.host_cost.host_speed_range`), milliseconds; None when not asked for or not host-bound."""

    def summary_extra(self) -> dict:
        """The summary JSON's keys that come from the prediction (beyond per-iteration `time_ms`)."""
        flops = self.model_flops_per_iteration
        return {
            "estimate_sources": self.source_shares,
            "breakdown_ms": self.breakdown,
            "slowest_rank": self.slowest_rank,
            "rank_breakdowns_ms": self.rank_breakdowns,
            "top_ops": self.top_ops,
            "top_modules": self.top_modules,
            "gpu_ms_by_phase": self.gpu_ms_by_phase,
            "from_iteration": self.from_iteration,
            "model_flops_per_iteration": statistics.median(flops) if flops else None,
            "cluster": {
                "name": self.cluster.name, "gpu": self.cluster.gpu, "nodes": self.cluster.nodes,
                "gpus_per_node": self.cluster.gpus_per_node,
                "price_per_gpu_hour_usd": self.cluster.price_per_gpu_hour_usd,
            },
            "timeline": self.timeline_path,
            **({"host_speed_range_ms": list(self.host_speed_range_ms)} if self.host_speed_range_ms else {}),
        }


def predict(
    tables: Mapping[int, pa.Table],
    gpu: str,
    *,
    cluster: ClusterSpec | None = None,
    rank_to_representative: Mapping[int, int] | None = None,
    trace_dir: str | os.PathLike | None = None,
    timeline_path: str | os.PathLike | None = None,
    params: SimulationParams | None = None,
    exact: str | os.PathLike | None = None,
    host_per_op_us: Mapping[str, float] | None = None,
    with_host_speed_range: bool = False,
) -> Prediction:
    """Estimate every representative rank's trace on GPUs of type `gpu`, simulate the job, summarise.

    Example (one rank): `predict({0: read_rank_trace(trace_dir, 0)}, "h200", trace_dir=trace_dir)`.

    Args:
        tables: representative global rank -> its recorded trace (`maya.trace.read_rank_trace`).
        gpu: catalog key of the GPU the ops are estimated for.
        cluster: where the job runs; default `cluster_for_gpu(gpu, world_size)` (DGX-style nodes).
            Its GPU must be `gpu`.
        rank_to_representative: every global rank of the job -> the representative whose trace it
            shares; default: each traced rank stands for itself only.
        trace_dir: writes the timeline to `trace_dir/timeline.json` (unless `timeline_path` is given).
        timeline_path: where to write the Chrome/Perfetto timeline; no timeline without either.
        params: host, overlap and NCCL calibration of the simulation; default: the NCCL fits shipped
            for `gpu` (maya/estimator/data/<gpu>/nccl_fits.json) and the measured compute slow-down beside them;
            datasheet values and no slow-down otherwise.
        exact: op times measured on a real `gpu` for this trace (`maya profile --trace` output: its
            `exact.parquet` or the directory); they take precedence over the shipped exact table
            and the models for the signatures they hold.
        host_per_op_us: host figures measured on the machine the job will run on (`per_op_us` of its
            `maya profile --families host`), in place of the shipped ones it names.
        with_host_speed_range: when the slowest rank is host-bound for `HOST_BOUND_SHARE` of its time or more,
            and no `host_per_op_us` names the machine, simulate the job twice more with its host costs
            scaled by `host_speed_range(gpu)` (`Prediction.host_speed_range_ms`).

    Raises:
        ValueError: `cluster`'s GPU is not `gpu`, the job does not fit the cluster, or the ranks are
            inconsistent (see `maya.simulator.simulate`; collectives that can never match included).
    """
    world_size = len(rank_to_representative) if rank_to_representative is not None else len(tables)
    if cluster is None:
        cluster = cluster_for_gpu(gpu, world_size)
    elif cluster.gpu != gpu:
        raise ValueError(f"cluster {cluster.name!r} has gpu={cluster.gpu!r} but the ops are estimated for gpu={gpu!r}")
    if params is None:
        params = default_params(gpu)
    estimated, result = estimate_and_simulate(tables, gpu, cluster, rank_to_representative=rank_to_representative,
                                              params=params, exact=exact, host_per_op_us=host_per_op_us)
    breakdown = _breakdown_ms(result.breakdown[result.slowest_rank])
    spread = None
    scales = host_speed_range(gpu) if with_host_speed_range and host_per_op_us is None else None
    if scales and breakdown["host_bound_ms"] >= HOST_BOUND_SHARE * sum(breakdown.values()):
        spread = tuple(statistics.median(simulate(_host_scaled(estimated, scale), cluster, params=params,
                                                  rank_to_representative=rank_to_representative).iteration_times_us) / 1000.0
                       for scale in scales)
    if timeline_path is None and trace_dir is not None:
        timeline_path = Path(trace_dir) / "timeline.json"
    timeline = str(export_chrome_trace(result, timeline_path)) if timeline_path is not None else None
    slowest = result.slowest_rank
    iteration_ms = [t / 1000.0 for t in result.iteration_times_us]
    return Prediction(
        iteration_ms=iteration_ms,
        source_shares=_source_shares(estimated, result.rank_to_representative, result.from_iteration,
                                     result.to_iteration),
        breakdown=breakdown,
        slowest_rank=slowest,
        rank_breakdowns=[
            {"rank": b.rank, "members": b.members, "total_ms": b.total_us / 1000.0, **_breakdown_ms(b),
             "comm_ms": b.comm_us / 1000.0}
            for _, b in sorted(result.breakdown.items())
        ],
        top_ops=_top(result.top_ops, "op"),
        top_modules=_top(result.top_modules, "module"),
        gpu_ms_by_phase=_by_phase(result.phases),
        from_iteration=result.from_iteration,
        model_flops_per_iteration=model_flops_per_iteration(tables, len(iteration_ms), result.rank_to_representative),
        world_size=result.world_size,
        cluster=cluster,
        timeline_path=timeline,
        host_speed_range_ms=spread,
    )


def estimate_and_simulate(
    tables: Mapping[int, pa.Table],
    gpu: str,
    cluster: ClusterSpec,
    *,
    rank_to_representative: Mapping[int, int] | None = None,
    params: SimulationParams | None = None,
    exact: str | os.PathLike | None = None,
    host_per_op_us: Mapping[str, float] | None = None,
) -> tuple[dict[int, pd.DataFrame], SimulationResult]:
    """`predict`'s estimation and simulation (same arguments): each representative rank's estimated
    trace (with `host_us` and `launch_us`) and the simulation result, whose `timelines` give every
    row's host and GPU times. `host_per_op_us`: host figures to use instead of the shipped ones
    (`per_op_us` of another machine's `maya profile --families host`; figures it lacks stay shipped)."""
    exact_table = _user_exact_table(exact, gpu) if exact is not None else None
    estimated = {}
    with one_unmodelled_warning():
        for rank, table in tables.items():
            estimated[rank] = estimated_rank(table, gpu, exact=exact_table, host_per_op_us=host_per_op_us)
    if params is None:
        params = default_params(gpu)
    return estimated, simulate(estimated, cluster, rank_to_representative=rank_to_representative, params=params)


def estimated_rank(table, gpu: str, *, exact: ExactTable | None = None,
                   host_per_op_us: Mapping[str, float] | None = None, warn_unmodelled: bool = True) -> pd.DataFrame:
    """One rank's trace as the simulator takes it: estimated GPU durations, which rows a CUDA graph's
    replay launched (`graph_replay`), host costs (`host_us`) and cuDNN RNN launch times (`launch_us`)."""
    from maya.emulator.attrs import GRAPH_REPLAY

    df = estimate_trace(table, gpu=gpu, exact=exact, warn_unmodelled=warn_unmodelled)
    df["graph_replay"] = marked_rows(df, GRAPH_REPLAY)
    df["host_us"] = host_costs_us(df, gpu, per_op_us=host_per_op_us)
    df["launch_us"] = launch_stream_us(df, gpu, per_op_us=host_per_op_us)
    return df


def default_params(gpu: str) -> SimulationParams:
    """The simulation's calibration for `gpu`: NCCL fitted to its measurements where they exist
    (benchmarks/collective_model.py), its measured compute slow-down under overlap and kernel gap."""
    return SimulationParams(collective=calibrated_params(gpu), overlap_slowdown=calibrated_overlap_slowdown(gpu),
                            kernel_gap_us=kernel_gap_us(gpu), graph_kernel_gap_us=graph_kernel_gap_us(gpu))


def _host_scaled(estimated: dict[int, pd.DataFrame], scale: float) -> dict[int, pd.DataFrame]:
    """The estimated traces with every row's host time (and RNN launch time) multiplied by `scale`."""
    return {rank: df.assign(host_us=df["host_us"] * scale, launch_us=df["launch_us"] * scale)
            for rank, df in estimated.items()}


def _breakdown_ms(b: RankBreakdown) -> dict[str, float]:
    return {
        "compute_ms": b.compute_us / 1000.0,
        "exposed_comm_ms": b.exposed_comm_us / 1000.0,
        "host_bound_ms": b.host_bound_us / 1000.0,
        "idle_ms": b.idle_us / 1000.0,
    }


def _source_shares(
    estimated: dict[int, pd.DataFrame], representative: Mapping[int, int], first_iteration: int = 0,
    stop: Mapping[int, int] | None = None,
) -> dict[str, float]:
    """Estimate-source shares over every rank of the job (a representative counts once per member),
    over the ops of iterations `first_iteration` to `stop[rank]` (exclusive), as `top_ops` counts them."""
    members = Counter(representative.values())
    weighted = []
    for rank, df in estimated.items():
        if "iteration" in df.columns:
            counted = df["iteration"] >= first_iteration
            if stop is not None and rank in stop:
                counted &= df["iteration"] < stop[rank]
            df = df.loc[counted]
        weighted.append(df[["estimate_source", "duration_us"]].assign(duration_us=df["duration_us"] * members[rank]))
    return {str(k): float(v) for k, v in source_shares(pd.concat(weighted, ignore_index=True)).items()}


def _by_phase(phases: pd.DataFrame) -> dict[str, float]:
    """Milliseconds per phase, in the trace's `Phase` order (forward, backward, optimizer, other); a trace
    without phases counts as `unknown`, after them."""
    ms = {str(phase) or "unknown": total_us / 1000.0 for phase, total_us in zip(phases["phase"], phases["total_us"])}
    order = {phase.value: i for i, phase in enumerate(Phase)}
    return dict(sorted(ms.items(), key=lambda item: (order.get(item[0], len(order)), item[0])))


def _top(table: pd.DataFrame, key: str) -> list[dict]:
    """The first `TOP_N` rows as dicts: `key`, `kind` when the table has it (an op name can be both a
    kernel and a memcpy), `instances` when it has them (module paths summed), `gpu_ms` and `share`."""
    extra = [c for c in ("kind", "instances") if c in table.columns]
    return [
        {key: row[key], **{k: row[k] for k in extra}, "gpu_ms": row["total_us"] / 1000.0, "share": row["share"]}
        for row in table.head(TOP_N).to_dict("records")
    ]


def _user_exact_table(path: str | os.PathLike, gpu: str) -> ExactTable:
    """The measured table at `path` over the shipped exact table of `gpu`'s models."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"exact table {path} does not exist (make it with `maya profile --trace TRACE_DIR --out DIR`)")
    models = load_model_set(str(resolve_models_dir(gpu, None)))
    return ExactTable.load(path).overlaid(models.exact)
