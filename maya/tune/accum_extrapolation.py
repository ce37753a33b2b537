"""Micro-batch extrapolation: predict a configuration's many micro-batches from two small counts.

A configuration's gradient accumulation (`accum`, the pipeline's number of micro-batches) follows
from the global batch: accum = global_batch / (micro_batch * dp), often 64 to 1,024 at Llama scale.
The emulator records every op of every micro-batch, so its cost grows with accum, while the figures
the tuner needs grow affinely with it once the schedule is in steady state:

    step_time(a)  = step_time(a2)  + (a - a2) * (step_time(a2)  - step_time(a1))  / (a2 - a1)
    peak_bytes(a) = peak_bytes(a2) + (a - a2) * (peak_bytes(a2) - peak_bytes(a1)) / (a2 - a1)

Without a pipeline, each extra micro-batch adds one forward and backward (and, with DDP or FSDP,
one gradient reduction) and no memory after the second (the gradients exist by then), so the
counts are a1 = 2, a2 = 3. With pp stages, both counts must be past the point where the schedule's
micro-batches in flight stop growing, or the memory slope is too steep: measured (benchmarks/
pipeline_warmup_memory.py, benchmarks/results/pipeline_warmup_memory.json) on a GPT of 8 blocks
(width 1024) under 1F1B over 2 stages, stage 0's body peak was 1030, 1270, 1278 MiB at 2, 3, 4
micro-batches (it saturates at pp + 1, not pp), and under interleaved 1F1B 1062, 1526, 1622, 1718
MiB at 2, 4, 6, 8 (saturated from 2 * pp). So the counts are (pp + 1, pp + 2) for GPipe and 1F1B
and (2 * pp, 3 * pp) for schedules that need multiples of pp (interleaved); on 4 stages of 1F1B,
(5, 6) extrapolated to 16 gave the step time within 0.1% and every rank's peak within 0.7%. The
one-time work of a step (optimizer state, the optimizer step) is in both counts and cancels out of
the slope.

Peak memory is the maximum of affine parts, so each is extrapolated on its own and the largest is
kept (`memory_segments`). The *body* of an iteration (up to its last backward op) peaks with the
micro-batches in flight; its *tail* (after it, up to the optimizer step) starts from everything the
schedule kept and, with torch.distributed.pipelining, concatenates every micro-batch's output of
the last stage: it grows faster, and becomes the peak past some micro-batch count that the small
counts may not reach; the optimizer *step* (from its first op on) adds its state to what is left.
Reserved memory grows in allocator segments and is not affine; it is taken as the extrapolated
allocated peak times the reserved/allocated ratio of the larger count.

This is an approximation. benchmarks/accum_extrapolation.py measures its error against full
emulations (benchmarks/results/accum_extrapolation.json) and tests/tune/test_accum_extrapolation.py
bounds it on a tiny GPT. A configuration whose accum is at most a1 + a2 is emulated as it is (that
costs no more than the two small counts).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

NO_PIPELINE_COUNTS: tuple[int, int] = (2, 3)
"""Micro-batch counts emulated without a pipeline: the second is the first in steady state."""


STEADY_SCHEDULES: frozenset[str] = frozenset({"gpipe", "1f1b"})
"""Pipeline schedules (`pp_schedule` values) that take any micro-batch count: counts (pp + 1, pp + 2).
Any other schedule (interleaved, looped, zero-bubble) gets (2 * pp, 3 * pp)."""


def extrapolation_counts(accum: int, pp: int, schedule: str | None = None) -> tuple[int, int] | None:
    """The two micro-batch counts to emulate for a configuration, or None to emulate `accum` itself.

    Args:
        accum: the configuration's micro-batches per optimizer step.
        pp: its pipeline-parallel degree (stages; 1 without a pipeline).
        schedule: its pipeline schedule (`pp_schedule`), when pp > 1.

    Returns:
        (a1, a2) with a1 + a2 < accum, else None: (2, 3) without a pipeline; (pp + 1, pp + 2)
        for GPipe and 1F1B; (2 * pp, 3 * pp) otherwise (see the module docstring).
    """
    if pp == 1:
        a1, a2 = NO_PIPELINE_COUNTS
    elif schedule in STEADY_SCHEDULES:
        a1, a2 = pp + 1, pp + 2
    else:
        a1, a2 = 2 * pp, 3 * pp
    return (a1, a2) if a1 + a2 < accum else None


def memory_segments(trace_dir: str | Path, ranks: Iterable[int]) -> dict[str, list[int]]:
    """Peak allocated bytes of each rank's iteration bodies and tails (see the module docstring).

    Args:
        trace_dir: a complete trace directory.
        ranks: the emulated ranks to read.

    Returns:
        {str(rank): [body peak, tail peak, step peak]} in bytes (JSON keys: the figures are cached as JSON).
    """
    from maya.trace.store import read_rank_trace

    return {str(rank): table_memory_segments(read_rank_trace(trace_dir, rank)) for rank in ranks}


def table_memory_segments(table) -> list[int]:
    """[body peak, tail peak, step peak] of one rank's trace (a `pyarrow.Table` of the trace schema), bytes."""
    table = table.select(["iteration", "phase", "allocated_bytes"]).to_pydict()
    iterations, phases = table["iteration"], table["phase"]
    last_backward: dict[int, int] = {}
    for i, (iteration, phase) in enumerate(zip(iterations, phases)):
        if phase == "backward":
            last_backward[iteration] = i
    peaks = [0, 0, 0]  # body, tail, optimizer step
    in_step = None
    for i, (iteration, phase, allocated) in enumerate(zip(iterations, phases, table["allocated_bytes"])):
        if i <= last_backward.get(iteration, len(iterations)):
            part = 0
        else:
            in_step = iteration if phase == "optimizer" else in_step
            part = 2 if in_step == iteration else 1
        peaks[part] = max(peaks[part], allocated)
    return peaks


def affine(v1: float, v2: float, a1: int, a2: int, accum: int) -> float:
    """The value at `accum` of the line through (a1, v1) and (a2, v2)."""
    return v2 + (accum - a2) * (v2 - v1) / (a2 - a1)


def extrapolate_figures(figures: Mapping[int, Mapping[str, Any]], target: int, *, axis: str = "accum") -> dict[str, Any]:
    """The figures at `target` along one axis (micro-batches or depth) from the figures of two smaller counts.

    Args:
        figures: {c1: figures, c2: figures} as `maya.tune.evaluate.figures_from_summary` makes them
            (`step_time_ms`, `iteration_ms`, peaks in bytes, `breakdown_ms`, `memory_segments`, ...),
            or as an earlier call of this function derived them (extrapolations compose: first
            along micro-batches at each depth, then along depth).
        target: the count to predict.
        axis: `accum` or `depth`; the two counts are listed under `{axis}_emulated`.

    Returns:
        Figures of the same shape: times, peaks, every rank's memory segments and the breakdown
        extrapolated (see the module docstring); top ops, timeline and trace directory are those
        of the larger count.
    """
    (a1, f1), (a2, f2) = sorted(figures.items())
    derived = dict(f2)
    derived.pop("emulate_s", None)
    derived["iteration_ms"] = [affine(x, y, a1, a2, target) for x, y in zip(f1["iteration_ms"], f2["iteration_ms"])]
    if f1["step_time_ms"] is not None and f2["step_time_ms"] is not None:
        derived["step_time_ms"] = affine(f1["step_time_ms"], f2["step_time_ms"], a1, a2, target)
    s1, s2 = (f.get("memory_segments") or {} for f in (f1, f2))
    segments = {
        rank: [round(affine(x, y, a1, a2, target)) for x, y in zip(s1[rank], s2[rank])] for rank in s2 if rank in s1
    }
    derived["memory_segments"] = segments
    # The peak: the largest extrapolated part of the rank f2 reports; the whole peak without parts.
    rank = str(f2.get("memory_rank"))
    derived["peak_allocated_bytes"] = max(segments[rank]) if rank in segments else round(
        affine(f1["peak_allocated_bytes"], f2["peak_allocated_bytes"], a1, a2, target))
    ratio = f2["peak_reserved_bytes"] / f2["peak_allocated_bytes"] if f2["peak_allocated_bytes"] else 1.0
    derived["peak_reserved_bytes"] = round(derived["peak_allocated_bytes"] * ratio)
    breakdown1, breakdown2 = f1.get("breakdown_ms") or {}, f2.get("breakdown_ms") or {}
    derived["breakdown_ms"] = {
        k: max(0.0, affine(breakdown1.get(k, 0.0), v, a1, a2, target)) for k, v in breakdown2.items()
        if isinstance(v, (int, float))
    }
    derived[f"{axis}_emulated"] = [a1, a2]
    return derived
