"""The library entry points behind the CLI: `emulate` (and, as stages land, `simulate`, `tune`)."""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from maya.emulator.runner import ScriptModule, check_script, run_script
from maya.emulator.state import RankConfig
from maya.hardware import load_gpu
from maya.hardware.cluster import ClusterSpec
from maya.summary import EmulationSummary, IterationSummary
from maya.trace.build import rows_to_table
from maya.trace.store import clear_trace, write_meta, write_rank_trace

if TYPE_CHECKING:
    from maya.world.world_emulation import RankCheck

log = logging.getLogger(__name__)


def emulate(
    script: str | os.PathLike | ScriptModule,
    args: list[str] | tuple[str, ...] = (),
    *,
    gpu: str = "h200",
    nnodes: int = 1,
    nproc_per_node: int = 1,
    trace_dir: str | os.PathLike | None = None,
    dedup: bool = True,
    verify_dedup: bool = False,
    progress: Callable[[str], None] | None = None,
    variant_families: list[int] | None = None,
    cluster: ClusterSpec | None = None,
    in_process: bool = False,
    max_rank_classes: int | None = None,
    after_rank: RankCheck | None = None,
    first_ranks: Sequence[int] = (),
    rank_classes: Mapping[int, int] | None = None,
    host_profile: str | os.PathLike | Mapping[str, float] | None = None,
    zero_only_families: Sequence[int] = (),
    with_host_speed_range: bool = False,
    exact_dedup: bool = False,
) -> EmulationSummary:
    """Run a training script on the emulated GPU and record its trace.

    Example: `maya.emulate("train.py", ["--batch", "8"], gpu="h200")`, the library form of
    `maya emulate --gpu h200 train.py --batch 8`.

    Args:
        script: path of the unmodified training script, or `maya.ScriptModule.here("pkg.train")` for a module
            run as `python -m pkg.train` (torchrun's `-m`).
        args: the script's own command-line arguments.
        gpu: catalog key of the GPU to emulate (`maya.hardware.available_gpus()`).
        nnodes: nodes in the emulated world (torchrun --nnodes).
        nproc_per_node: GPUs per node (torchrun --nproc-per-node).
        trace_dir: where to write the trace; a new temporary directory by default.
        dedup: with several ranks, emulate one rank per class of identical ranks (default);
            False emulates every rank.
        verify_dedup: also emulate a second member of every class and fail if its trace differs.
        exact_dedup: put ranks in one class only when their traces are the same. By default, ranks
            whose traces differ only in the shapes of their computation (each data-parallel rank's
            optimizer shard cuts the parameters at other places) share a class when their
            collectives, copies and host work are the same and their FLOPs, bytes and peak memory
            per iteration differ by at most 0.5% and their kernel counts by 2%
            (`maya.world.rank_classes.alike`; meta.json's `alike_families`).
        progress: called with one line per emulation step of a multi-rank run, and with a line every
            20 s while a one-rank script runs (trace rows recorded, iterations ended).
        variant_families: with several ranks, the group families that change a rank's trace, from
            the meta.json (`variant_families`) of an emulation of the same script and layout; the
            probe ranks that would find them are not emulated. None: probe.
        zero_only_families: with `variant_families`, those of them where only position 0 differs, from
            the same meta.json (`zero_only_families`).
        cluster: the cluster the job is simulated on (its world size must be nnodes *
            nproc_per_node, its GPU `gpu`); default: the GPU's preset cluster with torchrun's placement.
        in_process: with several ranks, emulate them one after another in this process and write
            the traces directly, with no Ray (what a tuning trial does); default: Ray tasks and a
            Ray Dataset.
        max_rank_classes: with several ranks, raise `maya.world.TooManyRankClassesError` instead of
            emulating more rank classes than this; None: no limit.
        after_rank: with several ranks, called with each emulated rank's `maya.world.rank_emulation.RankResult`;
            a returned reason ends the emulation with `maya.world.RankCheckStop`, writing no trace
            (the tuner's memory bound); None: every class is emulated.
        first_ranks: with several ranks, the ranks to emulate first, in this order (see `maya.world.emulate_world`).
        rank_classes: with several ranks and `variant_families`, every rank -> its class
            representative from the meta.json (`rank_to_representative`) of an emulation of the same
            script and layout: only the representatives are emulated (see `maya.world.emulate_world`).
        host_profile: host costs measured on the machine the job will run on (`maya profile --families
            host --out DIR`: DIR or DIR/host_overhead.json, or its `per_op_us` figures already read);
            its per-op figures replace the shipped ones in the prediction, and in the step times a
            one-rank script measures with CUDA events (several ranks' own event timings keep the
            shipped figures).
        with_host_speed_range: a host-bound prediction also gives the step on a fast and a slow machine
            (`host_speed_range_ms` in the summary; `maya.predict.predict`), at the price of two more
            simulations; not with `host_profile`.

    Returns:
        The run's summary. It is returned, not raised, when the script fails: check `exit_code`.

    Raises:
        FileNotFoundError, ValueError: `script` or `host_profile` is missing, or `host_profile` is not a
            host profile (before emulating).
    """
    from maya.estimator.host_cost import host_profile_figures

    spec = load_gpu(gpu)
    host_per_op_us = host_profile_figures(host_profile)
    if nnodes < 1 or nproc_per_node < 1:
        raise ValueError(f"nnodes={nnodes} and nproc_per_node={nproc_per_node} must both be >= 1")
    world_size = nnodes * nproc_per_node
    if cluster is not None and cluster.world_size != world_size:
        raise ValueError(f"cluster {cluster.name!r} has {cluster.world_size} GPUs but nnodes={nnodes} * nproc_per_node={nproc_per_node} = {world_size}")
    check_script(script)
    trace_dir = Path(trace_dir) if trace_dir is not None else Path(tempfile.mkdtemp(prefix="maya-trace-"))
    if clear_trace(trace_dir):
        log.info("replacing the trace an earlier run left in %s", trace_dir)
    if world_size > 1:
        return _emulate_world(
            script, list(args), spec.key, world_size, nproc_per_node, trace_dir, dedup, verify_dedup, progress,
            variant_families, cluster, in_process, max_rank_classes, after_rank, first_ranks, rank_classes,
            host_per_op_us, zero_only_families, with_host_speed_range, exact_dedup,
        )
    config = RankConfig(gpu=spec, rank=0, world_size=world_size, local_rank=0, local_world_size=nproc_per_node)
    from maya.event_timing import EventTimer

    outcome = run_script(script, list(args), config, elapsed_time_ms=EventTimer(spec.key, host_per_op_us),
                         progress=progress)
    state = outcome.state
    table = rows_to_table(state.rows)
    write_rank_trace(trace_dir, config.rank, table)
    iterations = _iterations(state.iterations, table)
    extra: dict = {}
    # A script that fails after whole iterations (saving a checkpoint at the end, say) still gets their
    # times; one that runs out of memory, or fails within its first iteration, gets none.
    completed = outcome.exit_code != 0 and not outcome.oom and len(state.iterations) > 1
    if outcome.exit_code == 0 or completed:
        iterations, extra = _with_times(iterations, table, spec.key, trace_dir, cluster, host_per_op_us, with_host_speed_range)
    if outcome.exit_code == 0:  # a failed run's trace stays incomplete for `maya simulate`
        write_meta(
            trace_dir,
            {"world_size": world_size, "gpu": spec.key, "emulated_ranks": [config.rank], "script": str(script), "args": list(args)},
        )
    return EmulationSummary(
        world_size=world_size,
        gpu=spec.key,
        emulated_ranks=[config.rank],
        iterations=iterations,
        oom=outcome.oom,
        trace_dir=str(trace_dir),
        exit_code=outcome.exit_code,
        error=outcome.error,
        extra=extra,
    )


def _with_times(iterations: list[IterationSummary], table, gpu: str, trace_dir: Path, cluster: ClusterSpec | None = None,
                host_per_op_us: Mapping[str, float] | None = None, with_host_speed_range: bool = False):
    """Fill `time_ms` from the estimator and simulator; extras carry breakdown and sources."""
    from maya.predict import predict

    prediction = predict({0: table}, gpu, cluster=cluster, trace_dir=trace_dir, host_per_op_us=host_per_op_us,
                         with_host_speed_range=with_host_speed_range)
    times = prediction.iteration_ms
    timed = [replace(it, time_ms=times[it.index]) if it.index < len(times) else it for it in iterations]
    extra = prediction.summary_extra()
    return timed, extra


def _emulate_world(
    script, args: list[str], gpu: str, world_size: int, local_world_size: int, trace_dir: Path,
    dedup: bool, verify_dedup: bool, progress, variant_families: list[int] | None = None,
    cluster: ClusterSpec | None = None, in_process: bool = False, max_rank_classes: int | None = None,
    after_rank: RankCheck | None = None, first_ranks: Sequence[int] = (), rank_classes: Mapping[int, int] | None = None,
    host_per_op_us: Mapping[str, float] | None = None, zero_only_families: Sequence[int] = (),
    with_host_speed_range: bool = False, exact_dedup: bool = False,
) -> EmulationSummary:
    """Several ranks: emulate the rank classes as Ray tasks, then time the whole job."""
    from maya.predict import predict
    from maya.trace.dataset import write_traces_dataset
    from maya.world import RankFailedError, emulate_world
    from maya.world.world_emulation import completed_iterations, through_iteration

    try:
        world = emulate_world(
            script, args, gpu=gpu, world_size=world_size, local_world_size=local_world_size, dedup=dedup,
            verify_dedup=verify_dedup, progress=progress, variant_families=variant_families, in_process=in_process,
            max_rank_classes=max_rank_classes, after_rank=after_rank, first_ranks=first_ranks, rank_classes=rank_classes,
            late_failures=True, zero_only_families=zero_only_families, exact_dedup=exact_dedup,
        )
    except RankFailedError as e:
        return _failed_summary(e.result, world_size, gpu, [e.result.rank], trace_dir)
    reps = world.representatives
    if in_process:
        for rank, res in world.results.items():
            write_rank_trace(trace_dir, rank, res.table)
    else:
        write_traces_dataset(trace_dir, {r: res.table for r, res in world.results.items()})
    tables = {r: world.results[r].table for r in reps}
    # Ranks whose script failed after whole iterations (a final checkpoint it cannot write, say): the
    # iterations every representative completed are timed; the trace stays incomplete (no meta.json).
    failed = sorted((res for res in world.results.values() if res.exit_code), key=lambda res: res.rank)
    if failed:
        whole = min(completed_iterations(t) for t in tables.values())
        first = failed[0]
        if whole < 1:
            return _failed_summary(first, world_size, gpu, reps, trace_dir)
        tables = {r: through_iteration(t, whole) for r, t in tables.items()}
    prediction = predict(
        tables, gpu, cluster=cluster or _launch_cluster(gpu, world_size, local_world_size),
        rank_to_representative=world.rank_to_representative, trace_dir=trace_dir, host_per_op_us=host_per_op_us,
        with_host_speed_range=with_host_speed_range,
    )
    slowest = world.rank_to_representative[prediction.slowest_rank]
    iterations = _iterations(world.results[slowest].iterations, tables[slowest])
    if failed:
        iterations = iterations[:whole]
    times = prediction.iteration_ms
    iterations = [replace(it, time_ms=times[it.index]) if it.index < len(times) else it for it in iterations]
    members: dict[int, list[int]] = {}
    for rank, rep in world.rank_to_representative.items():
        members.setdefault(rep, []).append(rank)
    extra = {
        **prediction.summary_extra(),
        "rank_classes": [{"representative": r, "ranks": len(m), "members": _ranges(m)} for r, m in sorted(members.items())],
        "peak_allocated_bytes_per_representative": {
            str(r): world.results[r].peak_allocated_bytes for r in reps
        },
        "emulation_s": {str(r): round(res.emulation_s, 2) for r, res in sorted(world.results.items())},
    }
    if failed:
        return _failed_summary(failed[0], world_size, gpu, reps, trace_dir, iterations, extra)
    write_meta(trace_dir, {
        "world_size": world_size, "gpu": gpu, "emulated_ranks": reps, "script": str(script), "args": list(args),
        "rank_to_representative": {str(r): rep for r, rep in world.rank_to_representative.items()},
        "nproc_per_node": local_world_size,
        "variant_families": world.variant_families if dedup else None,
        "zero_only_families": world.zero_only_families if dedup else None,
        "alike_families": world.alike_families if dedup else None,
    })
    return EmulationSummary(
        world_size=world_size, gpu=gpu, emulated_ranks=reps, iterations=iterations,
        oom=any(res.oom for res in world.results.values()), trace_dir=str(trace_dir), extra=extra,
    )


def _failed_summary(failed, world_size: int, gpu: str, emulated_ranks: list[int], trace_dir: Path,
                    iterations: list[IterationSummary] = (), extra: dict | None = None) -> EmulationSummary:
    """The summary of a run whose script failed on rank `failed.rank` (a `RankResult`): its exit
    status and traceback, and the iterations timed before it failed, if any."""
    return EmulationSummary(
        world_size=world_size, gpu=gpu, emulated_ranks=emulated_ranks, iterations=list(iterations), oom=failed.oom,
        trace_dir=str(trace_dir), exit_code=failed.exit_code or 1, error=f"[rank {failed.rank}] {failed.error}",
        extra=extra or {},
    )


def _launch_cluster(gpu: str, world_size: int, local_world_size: int):
    """The GPU's preset cluster, with torchrun's placement: `local_world_size` ranks on each node."""
    from maya.hardware.cluster import cluster_for_gpu

    cluster = cluster_for_gpu(gpu, world_size)
    if world_size <= cluster.gpus_per_node or local_world_size == cluster.gpus_per_node:
        return cluster
    return replace(
        cluster, nodes=world_size // local_world_size, gpus_per_node=local_world_size,
        nvlink_domain_size=min(cluster.nvlink_domain_size, local_world_size),
    )


def _ranges(ranks: list[int]) -> str:
    """`[0, 1, 2, 5]` -> "0-2,5"."""
    ranks = sorted(ranks)
    parts, start = [], ranks[0]
    for a, b in zip(ranks, ranks[1:] + [None]):
        if b != a + 1:
            parts.append(f"{start}-{a}" if a != start else str(a))
            start = b
    return ",".join(parts)


def _iterations(stats, table) -> list[IterationSummary]:
    """Per-iteration figures; a trailing iteration that never reached an optimizer step is dropped
    when at least one complete iteration exists."""
    gpu_work = table.filter(pc.is_in(table["kind"], value_set=pa.array(["kernel", "memcpy"])))
    per_iteration = gpu_work.group_by("iteration").aggregate([("flops", "sum"), ("flops", "count")]).to_pydict()
    counts = dict(zip(per_iteration["iteration"], per_iteration["flops_count"]))
    flops = dict(zip(per_iteration["iteration"], per_iteration["flops_sum"]))
    complete = stats[:-1] if len(stats) > 1 else stats
    return [
        IterationSummary(
            index=s.index,
            time_ms=None,
            peak_allocated_bytes=s.peak_allocated_bytes,
            peak_reserved_bytes=s.peak_reserved_bytes,
            ops=counts.get(s.index, 0),
            flops=flops.get(s.index, 0.0),
        )
        for s in complete
    ]
