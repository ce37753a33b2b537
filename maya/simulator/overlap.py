"""Compute/communication overlap: kernels slow down while a collective runs on the same rank.

The busy time of a rank's collectives is kept as sorted, disjoint intervals (two parallel lists of
start and end times, microseconds). A kernel progresses at rate 1/slowdown inside them and 1
outside. The factor is a calibration parameter (NCCL kernels take SMs and memory bandwidth away
from compute; see e.g. the "Centauri"/"FlashOverlap" measurements); it is 1.0 until calibrated.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right


def add_busy_interval(starts: list[float], ends: list[float], start_us: float, end_us: float) -> None:
    """Insert [start_us, end_us) into the sorted disjoint intervals, merging any it touches."""
    i = bisect_left(ends, start_us)
    j = bisect_right(starts, end_us)
    if i < j:
        start_us = min(start_us, starts[i])
        end_us = max(end_us, ends[j - 1])
    starts[i:j] = [start_us]
    ends[i:j] = [end_us]


def stretched_end_us(start_us: float, duration_us: float, starts: list[float], ends: list[float], slowdown: float) -> float:
    """End time of a kernel of `duration_us` that starts at `start_us`.

    Inside a busy interval the kernel advances duration at rate 1/slowdown, so a kernel fully
    inside one ends at start + duration * slowdown.
    """
    t, work = start_us, duration_us
    j = bisect_right(ends, t)
    while j < len(starts) and starts[j] < t + work:
        if starts[j] > t:
            work -= starts[j] - t
            t = starts[j]
        capacity = (ends[j] - t) / slowdown
        if work <= capacity:
            return t + work * slowdown
        work -= capacity
        t = ends[j]
        j += 1
    return t + work
