"""The library entry points behind the CLI: `emulate` (and, as stages land, `simulate`, `tune`)."""

from __future__ import annotations

import logging
import os
import tempfile
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from maya.emulator.runner import run_script
from maya.emulator.state import RankConfig
from maya.hardware import load_gpu
from maya.summary import EmulationSummary, IterationSummary
from maya.trace.build import rows_to_table
from maya.trace.store import write_meta, write_rank_trace

log = logging.getLogger(__name__)


def emulate(
    script: str | os.PathLike,
    args: list[str] | tuple[str, ...] = (),
    *,
    gpu: str = "h200",
    nnodes: int = 1,
    nproc_per_node: int = 1,
    trace_dir: str | os.PathLike | None = None,
) -> EmulationSummary:
    """Run a training script on the emulated GPU and record its trace.

    Example: `maya.emulate("train.py", ["--batch", "8"], gpu="h200")`, the library form of
    `maya emulate --gpu h200 train.py --batch 8`.

    Args:
        script: path of the unmodified training script.
        args: the script's own command-line arguments.
        gpu: catalog key of the GPU to emulate (`maya.hardware.available_gpus()`).
        nnodes: nodes in the emulated world (torchrun --nnodes).
        nproc_per_node: GPUs per node (torchrun --nproc-per-node).
        trace_dir: where to write the trace; a new temporary directory by default.

    Returns:
        The run's summary. It is returned, not raised, when the script fails: check `exit_code`.
    """
    spec = load_gpu(gpu)
    if nnodes < 1 or nproc_per_node < 1:
        raise ValueError(f"nnodes={nnodes} and nproc_per_node={nproc_per_node} must both be >= 1")
    world_size = nnodes * nproc_per_node
    if world_size > 1:
        raise NotImplementedError(
            f"world_size={world_size}: multi-rank emulation (the fake NCCL process group) is not implemented yet; "
            "run with --nnodes 1 --nproc-per-node 1"
        )
    trace_dir = Path(trace_dir) if trace_dir is not None else Path(tempfile.mkdtemp(prefix="maya-trace-"))
    config = RankConfig(gpu=spec, rank=0, world_size=world_size, local_rank=0, local_world_size=nproc_per_node)
    outcome = run_script(script, list(args), config)
    state = outcome.state
    table = rows_to_table(state.rows)
    write_rank_trace(trace_dir, config.rank, table)
    iterations = _iterations(state, table)
    extra: dict = {}
    if outcome.exit_code == 0:
        iterations, extra = _with_times(iterations, table, spec.key, trace_dir)
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


def _with_times(iterations: list[IterationSummary], table, gpu: str, trace_dir: Path):
    """Fill `time_ms` from the estimator and simulator; extras carry breakdown and sources."""
    from maya.predict import predict

    prediction = predict({0: table}, gpu, trace_dir=trace_dir)
    times = prediction.iteration_ms
    timed = [replace(it, time_ms=times[it.index]) if it.index < len(times) else it for it in iterations]
    extra = {
        "estimate_sources": prediction.source_shares,
        "breakdown_ms": prediction.breakdown,
        "top_ops": prediction.top_ops,
        "top_modules": prediction.top_modules,
        "timeline": prediction.timeline_path,
    }
    return timed, extra


def _iterations(state, table) -> list[IterationSummary]:
    """Per-iteration figures; a trailing iteration that never reached an optimizer step is dropped
    when at least one complete iteration exists."""
    gpu_work = table.filter(pc.is_in(table["kind"], value_set=pa.array(["kernel", "memcpy"])))
    per_iteration = gpu_work.group_by("iteration").aggregate([("flops", "sum"), ("flops", "count")]).to_pydict()
    counts = dict(zip(per_iteration["iteration"], per_iteration["flops_count"]))
    flops = dict(zip(per_iteration["iteration"], per_iteration["flops_sum"]))
    stats = state.iterations
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
