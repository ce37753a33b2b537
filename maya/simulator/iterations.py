"""Iteration boundaries: when each rank finishes each iteration, and the job's iteration times."""

from __future__ import annotations

import numpy as np


def rank_iteration_ends_us(
    *, is_gpu: np.ndarray, is_iteration_end: np.ndarray, end_us: np.ndarray, host_end_us: np.ndarray, final_us: float
) -> np.ndarray:
    """When a rank finishes each iteration, microseconds.

    An iteration ends at its `iteration_end` row once the host has passed it and every GPU op issued
    before it has finished. A trace without `iteration_end` rows is one iteration that ends at
    `final_us`.
    """
    rows = np.flatnonzero(is_iteration_end)
    if len(rows) == 0:
        return np.array([final_us])
    gpu_end = np.where(is_gpu, np.nan_to_num(end_us, nan=0.0), 0.0)
    done = np.maximum.accumulate(gpu_end)
    return np.maximum(host_end_us[rows], done[rows])


def iteration_times_us(rank_ends_us: dict[int, np.ndarray]) -> tuple[float, ...]:
    """Per-iteration time: the slowest rank's time from the end of its previous iteration.

    Ranks with fewer iterations than others simply stop contributing.
    """
    count = max((len(ends) for ends in rank_ends_us.values()), default=0)
    times = []
    for index in range(count):
        per_rank = [
            ends[index] - (ends[index - 1] if index else 0.0) for ends in rank_ends_us.values() if len(ends) > index
        ]
        times.append(float(max(per_rank)))
    return tuple(times)
