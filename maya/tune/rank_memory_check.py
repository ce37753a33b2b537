"""Rank memory checks: end an extrapolation corner's emulation at the first rank that cannot fit.

A configuration extrapolated from small emulations (`maya.tune.evaluate._extrapolated`: two depths
and/or two micro-batch counts, up to four corners) used to learn that it does not fit only between
corners, from the rank the summary reports. In a study of a 70B-class model most pipelined
configurations do not fit, and each corner emulates every pipeline stage, one after another
(emulated infeasible configurations took 2,651 of 3,569 trial-seconds of
benchmarks/results/tune_throughput_llama_three_corners_rerun_trials.csv.gz: `python
benchmarks/tune_throughput.py --trials` on it). Here every rank is checked as soon as it is
emulated, against the corners already emulated *for that rank*, and the corner's emulation stops
(`maya.world.RankCheckStop`) at the first rank whose memory, bounded from below, exceeds the GPU:

- its own peak at this corner (a smaller depth and micro-batch count than the configuration's);
- with the two depths at the first micro-batch count: its memory extrapolated to the full depth
  (more micro-batches only keep more alive);
- with the two micro-batch counts at the first depth: its memory extrapolated to the full count
  (a deeper model only holds more);
- with three corners: m(L, A) >= m(L, a1) + m(d1, A) - m(d1, a1) (a block's activations per
  micro-batch are a non-negative cross term; `_over_memory_by_three_corners`);
- with all four: the extrapolation itself, which the configuration's figures would report.

Each is a bound on the memory of one rank, and one rank over memory is enough for the
configuration to fail. Ranks are emulated in descending order of their peak at the previous corner,
so the stage most likely to stop the corner goes first. Each memory part (body, tail, optimizer
step; `maya.tune.accum_extrapolation.memory_segments`) is extrapolated on its own; reserved bytes
are allocated bytes times the rank's own reserved/allocated ratio at this corner.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from maya.tune.accum_extrapolation import affine, table_memory_segments

Corner = tuple[int | None, int | None]
"""(depth, accum) of one emulated point; None on an axis that is not extrapolated."""


class RankMemoryCheck:
    """The `after_rank` check of the emulation at one corner: called with a
    `maya.world.rank_emulation.RankResult`, it returns why the configuration cannot fit, or None,
    and keeps the bound that stopped it in `peaks`."""

    def __init__(
        self, *, corner: Corner, depths: tuple[int, int] | None, accums: tuple[int, int] | None,
        full_depth: int | None, accum: int, prior: Mapping[Corner, Mapping[str, Any]],
        over_capacity: Callable[[int, str], str | None],
    ) -> None:
        """
        Args:
            corner: the point being emulated.
            depths: the two depths of the configuration's extrapolation, or None.
            accums: its two micro-batch counts, or None.
            full_depth: the depth extrapolated to (with `depths`).
            accum: the configuration's micro-batch count.
            prior: figures of the corners already emulated (`maya.tune.evaluate.figures_from_summary`,
                with `memory_segments` per rank).
            over_capacity: (reserved bytes, where) -> why that does not fit, or None when it does.
        """
        self.corner, self.depths, self.accums, self.full_depth, self.accum = corner, depths, accums, full_depth, accum
        self.prior = dict(prior)
        self.over_capacity = over_capacity
        self.peaks: dict[str, int] | None = None
        """{"peak_allocated_bytes", "peak_reserved_bytes"} of the bound that stopped the emulation."""
        self.segments: dict[str, list[int]] = {}
        """Memory parts of every rank checked so far, keyed str(rank) (`memory_segments`' form): the
        corner's figures take them from here instead of reading the traces back."""

    def __call__(self, result) -> str | None:
        rank = str(result.rank)
        segments = {c: f["memory_segments"][rank] for c, f in self.prior.items()
                    if rank in (f.get("memory_segments") or {})}
        segments[self.corner] = self.segments[rank] = table_memory_segments(result.table)
        bound, where = memory_bound(segments, depths=self.depths, accums=self.accums, full_depth=self.full_depth,
                                    accum=self.accum)
        allocated, reserved = result.peak_allocated_bytes, result.peak_reserved_bytes
        bound_reserved = round(bound * (reserved / allocated if allocated else 1.0))
        reason = self.over_capacity(bound_reserved, f"{where} (rank {result.rank})")
        if reason is not None:
            self.peaks = {"peak_allocated_bytes": bound, "peak_reserved_bytes": bound_reserved}
        return reason


def memory_bound(
    segments: Mapping[Corner, Sequence[int]], *, depths: tuple[int, int] | None, accums: tuple[int, int] | None,
    full_depth: int | None, accum: int,
) -> tuple[int, str]:
    """(the largest lower bound on one rank's allocated bytes at the full depth and micro-batch
    count, where it comes from) given that rank's memory parts at the corners emulated so far."""
    d1, d2 = depths or (None, None)
    a1, a2 = accums or (None, None)
    bounds = [(max(s), _at(c)) for c, s in segments.items()]

    def along(s1, s2, x1, x2, target):
        return [round(affine(y1, y2, x1, x2, target)) for y1, y2 in zip(s1, s2)]

    deep = many = None
    if depths and (d1, a1) in segments and (d2, a1) in segments:
        deep = along(segments[d1, a1], segments[d2, a1], d1, d2, full_depth)
        tail = f"; accum={accum} holds at least as much" if accums else ""
        where = f"depth={full_depth}{f', accum={a1}' if accums else ''}, extrapolated from depth={d1} and {d2}{tail}"
        bounds.append((max(deep), where))
    if accums and (d1, a1) in segments and (d1, a2) in segments:
        many = along(segments[d1, a1], segments[d1, a2], a1, a2, accum)
        tail = f"; depth={full_depth} holds at least as much" if depths else ""
        where = f"{f'depth={d1}, ' if depths else ''}accum={accum}, extrapolated from accum={a1} and {a2}{tail}"
        bounds.append((max(many), where))
    if deep is not None and many is not None:
        base = segments[d1, a1]
        bounds.append((max(x + y - z for x, y, z in zip(deep, many, base)),
                       f"depth={full_depth}, accum={accum}, bounded below from depth={d1} and {d2}, accum={a1} and {a2}"))
        if (d2, a2) in segments:
            many_deep = along(segments[d2, a1], segments[d2, a2], a1, a2, accum)
            bounds.append((max(along(many, many_deep, d1, d2, full_depth)),
                           f"depth={full_depth}, accum={accum}, extrapolated from depth={d1} and {d2}, accum={a1} and {a2}"))
    return max(bounds, key=lambda b: b[0])


def _at(corner: Corner) -> str:
    depth, accum = corner
    return ", ".join(f"{k}={v}" for k, v in (("depth", depth), ("accum", accum)) if v is not None) + " (emulated)"


def stage_order(prior: Mapping[Corner, Mapping[str, Any]]) -> list[int]:
    """Ranks in descending order of their peak at the latest corner of `prior` (the order to
    emulate the next corner's ranks in); empty before any corner."""
    if not prior:
        return []
    latest = list(prior.values())[-1].get("memory_segments") or {}
    return [int(rank) for rank, parts in sorted(latest.items(), key=lambda item: -max(item[1]))]
