"""`simulate`: run every (representative) rank's trace on a cluster and report the result."""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Mapping

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from maya.estimator.collective import collective_duration_us
from maya.hardware.cluster import ClusterSpec
from maya.simulator.breakdown import rank_breakdown
from maya.simulator.collective_matcher import CollectiveMatcher
from maya.simulator.engine import Engine
from maya.simulator.host_run import HostRun
from maya.simulator.iterations import iteration_times_us, rank_iteration_ends_us
from maya.simulator.params import SimulationParams
from maya.simulator.rank_state import RankState
from maya.simulator.rank_trace import COLLECTIVE, ITERATION_END, KIND_NAMES, MEMCPY, CommCall, RankTrace
from maya.simulator.result import SimulationResult

logger = logging.getLogger(__name__)


class SimulationDeadlockError(RuntimeError):
    """The simulation stopped with work left that nothing can unblock."""


def simulate(
    traces: Mapping[int, pa.Table | pd.DataFrame],
    cluster: ClusterSpec,
    *,
    rank_to_representative: Mapping[int, int] | None = None,
    params: SimulationParams | None = None,
) -> SimulationResult:
    """Simulate a training job on `cluster`.

    Args:
        traces: representative global rank -> its trace (trace columns plus `duration_us`, and
            optionally `host_us`; see `RankTrace`).
        cluster: where the job runs; rank r is on node r // gpus_per_node.
        rank_to_representative: every global rank of the job -> the representative whose trace it
            shares (rank classes). Default: each traced rank stands for itself only.
        params: host, overlap and NCCL calibration.

    Raises:
        CollectiveMismatchError: collectives that can never match (names group, ranks, first call).
        SimulationDeadlockError: ranks stuck for another reason (e.g. waiting on each other's syncs).
        ValueError: inconsistent inputs (a representative without a trace, a job too large).
    """
    params = params or SimulationParams()
    representative = dict(rank_to_representative) if rank_to_representative is not None else {r: r for r in traces}
    _check_ranks(traces, representative, cluster)
    members = Counter(representative.values())

    durations: dict[tuple, float] = {}

    def duration_us(call: CommCall) -> float:
        key = (call.op, call.message_bytes, call.cost_ranks)
        if key not in durations:
            durations[key] = collective_duration_us(call.op, call.message_bytes, call.cost_ranks, cluster, params.collective)
        return durations[key]

    matcher = CollectiveMatcher(representative, duration_us)
    states = {
        rank: RankState(RankTrace(rank, traces[rank], params.host), matcher, params.overlap_slowdown,
                        params.kernel_gap_us, params.graph_kernel_gap_us)
        for rank in sorted(traces)
    }
    engine = Engine()
    engine.run([HostRun(time_us=0.0, state=state) for state in states.values()])
    matcher.check_all_matched(states)
    stuck = {rank: state.describe_blocked() for rank, state in states.items() if not state.finished}
    if stuck:
        raise SimulationDeadlockError("ranks never finished: " + "; ".join(f"rank {r}: {w}" for r, w in stuck.items()))
    logger.debug("simulated %d ranks with %d heap events", len(states), engine.handled)
    return _result(states, representative, members, engine.handled)


def _check_ranks(traces: Mapping, representative: dict[int, int], cluster: ClusterSpec) -> None:
    without_trace = sorted({rep for rep in representative.values() if rep not in traces})
    if without_trace:
        raise ValueError(f"representative rank(s) {without_trace[:10]} have no trace; traced: {sorted(traces)[:10]}")
    not_self = [r for r in traces if representative.get(r) != r]
    if not_self:
        raise ValueError(f"traced rank(s) {not_self[:10]} must map to themselves in rank_to_representative")
    world_size = len(representative)
    if sorted(representative) != list(range(world_size)):
        raise ValueError(f"rank_to_representative must cover ranks 0..{world_size - 1} exactly")
    cluster.check_world_size(world_size)


def _result(
    states: dict[int, RankState], representative: dict[int, int], members: Counter, events_handled: int
) -> SimulationResult:
    timelines, breakdown, ends, rows = {}, {}, {}, {}
    kind_names = pa.array([KIND_NAMES[c] for c in range(len(KIND_NAMES))])
    for rank, state in states.items():
        tr = state.trace
        kind = np.asarray(tr.kind, dtype=np.int8)
        issue, start, end = np.asarray(state.issue_us), np.asarray(state.start_us), np.asarray(state.end_us)
        is_compute, is_comm = kind <= MEMCPY, kind == COLLECTIVE
        final_us = state.final_time_us()
        ends[rank] = rank_iteration_ends_us(
            is_gpu=is_compute | is_comm, is_iteration_end=kind == ITERATION_END, end_us=end,
            host_end_us=end, final_us=final_us,
        )
        is_end = kind == ITERATION_END
        # Iteration k holds the rows up to and including the k-th iteration end (0-based).
        iteration = (np.cumsum(is_end) - is_end).astype(np.int32)
        rows[rank] = (is_compute, is_comm, issue, start, end, iteration, final_us, int(is_end.sum()))
        timelines[rank] = pa.table({
            "seq": tr.labels.column("seq"),
            "iteration": pa.array(iteration, pa.int32()),
            "kind": pa.DictionaryArray.from_arrays(pa.array(kind), kind_names),
            "op": tr.labels.column("op"),
            "module": tr.labels.column("module"),
            "phase": tr.labels.column("phase"),
            "allocated_bytes": tr.labels.column("allocated_bytes"),
            "reserved_bytes": tr.labels.column("reserved_bytes"),
            "stream": pa.array(tr.stream, pa.int32()),
            "host_start_us": issue - np.asarray(tr.host_us),
            "issue_us": issue,
            "start_us": start,
            "end_us": end,
        })
    # The steady state: the whole iterations after the first, when any rank has GPU work in them
    # (the first also holds the script's set-up, such as copying the model to the GPU). Work after a
    # rank's last iteration end (a final evaluation, a checkpoint) is in no iteration: left out.
    stop = {rank: r[7] or 1 for rank, r in rows.items()}  # iterations kept: < stop (a trace without ends is one)
    first = int(any(((c | m) & (it >= 1) & (it < stop[rank])).any()
                    for rank, (c, m, _, _, _, it, _, _) in rows.items()))
    for rank, (is_compute, is_comm, issue, start, end, iteration, final_us, n_ends) in rows.items():
        keep = (iteration >= first) & (iteration < stop[rank])
        window_start = float(ends[rank][0]) if first else 0.0
        window_end = float(ends[rank][-1]) if n_ends else final_us
        breakdown[rank] = rank_breakdown(
            rank=rank, members=members[rank], total_us=max(window_end - window_start, 0.0),
            is_compute=is_compute[keep], is_comm=is_comm[keep], issue_us=issue[keep], start_us=start[keep],
            end_us=end[keep], window_start_us=window_start,
        )
    top_ops, top_modules, phases = _top(timelines, members, first, stop)
    return SimulationResult(
        world_size=len(representative),
        iteration_times_us=iteration_times_us(ends),
        rank_iteration_ends_us={r: tuple(float(x) for x in e) for r, e in ends.items()},
        breakdown=breakdown,
        top_ops=top_ops,
        top_modules=top_modules,
        phases=phases,
        from_iteration=first,
        to_iteration=stop,
        timelines=timelines,
        rank_to_representative=representative,
        events_handled=events_handled,
    )


def _top(
    timelines: dict[int, pa.Table], members: Counter, first: int, stop: dict[int, int]
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """GPU time per op, per module and per phase of iterations `first` to `stop[rank]` (exclusive),
    summed over every rank of the job (representatives weighted)."""
    parts = []
    for rank, timeline in timelines.items():
        kind = timeline.column("kind").combine_chunks()
        iteration = timeline.column("iteration")
        keep = pc.and_(pc.less_equal(kind.indices, COLLECTIVE),
                       pc.and_(pc.greater_equal(iteration, first), pc.less(iteration, stop[rank])))
        gpu = timeline.filter(keep)
        weight = members[rank]
        parts.append(pa.table({
            "op": gpu.column("op"),
            "kind": gpu.column("kind").cast(pa.string()),
            "module": pc.if_else(pc.equal(gpu.column("module"), ""), "<top>", gpu.column("module")),
            "phase": gpu.column("phase"),
            "total_us": pc.multiply(pc.subtract(gpu.column("end_us"), gpu.column("start_us")), float(weight)),
            "count": pa.array(np.full(gpu.num_rows, weight, dtype=np.int64)),
        }))
    rows = pa.concat_tables(parts)
    grand_total_us = pc.sum(rows.column("total_us")).as_py() or 1.0

    def aggregate(keys: list[str]) -> pd.DataFrame:
        table = rows.group_by(keys).aggregate([("total_us", "sum"), ("count", "sum")]).to_pandas()
        table = table.rename(columns={"total_us_sum": "total_us", "count_sum": "count"})
        table["share"] = table["total_us"] / grand_total_us
        return _largest_first(table, keys)[[*keys, "total_us", "count", "share"]]

    return aggregate(["op", "kind"]), _by_layer(aggregate(["module"])), aggregate(["phase"])


def _largest_first(table: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """`table` by total_us, largest first, ties by `keys`. Identical blocks' sums differ only in the last
    bits, in an order that Arrow's threaded grouping does not fix, so the ranking rounds to the
    nanosecond first."""
    return (table.assign(_rank=table["total_us"].round(3))
            .sort_values(["_rank", *keys], ascending=[False] + [True] * len(keys), ignore_index=True)
            .drop(columns="_rank"))  # fmt: skip


_LAYER_INDEX = re.compile(r"(?<![^.])\d+(?![^.])")
"""A module path component that is a number: the index of a layer in an `nn.Sequential` or `nn.ModuleList`."""


def layer_pattern(module: str) -> str:
    """`module` with each numeric path component replaced by `*`: `blocks.3.mlp.0` -> `blocks.*.mlp.*`,
    so that a model's repeated layers are counted together."""
    return _LAYER_INDEX.sub("*", module)


def _by_layer(modules: pd.DataFrame) -> pd.DataFrame:
    """Per-module-path GPU time (`aggregate(["module"])`) summed over the paths that differ only in layer
    indices (`layer_pattern`): columns module (the pattern), instances (paths summed), total_us, count,
    share; largest first, ties by name."""
    table = (modules.assign(module=modules["module"].map(layer_pattern))
             .groupby("module", sort=False)
             .agg(instances=("module", "size"), total_us=("total_us", "sum"), count=("count", "sum"),
                  share=("share", "sum"))
             .reset_index())  # fmt: skip
    return _largest_first(table, ["module"])[["module", "instances", "total_us", "count", "share"]]
