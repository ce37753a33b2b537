"""`RankBreakdown`: where one rank's time went, from its simulated timeline.

Every microsecond of a rank's span [0, end] (or of its steady state, the iterations after the
first) falls in exactly one bucket:
compute (some kernel or memcpy runs), exposed communication (a collective runs and no compute
does), host-bound (the GPU is idle and the next GPU op started as soon as the host issued it, or the
host is still working after the GPU finished), idle (the GPU is idle waiting on a dependency: a
collective's peers, an event, a pipeline bubble).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, kw_only=True, slots=True)
class RankBreakdown:
    """One rank's time split into disjoint buckets, microseconds; they sum to `total_us`."""

    rank: int
    """The (representative) global rank."""
    members: int
    """How many ranks of the job this rank stands for (1 without rank classes)."""
    total_us: float
    """From the start of the simulation until the rank's host and GPU are both done."""
    compute_us: float
    """Time at least one kernel or memcpy runs."""
    exposed_comm_us: float
    """Time a collective runs while no kernel or memcpy does."""
    host_bound_us: float
    """GPU idle time spent waiting for the host to issue work."""
    idle_us: float
    """GPU idle time spent waiting on dependencies: peers, events, pipeline bubbles."""
    comm_us: float
    """Time at least one collective runs, overlapped or not (not one of the disjoint buckets)."""

    def __post_init__(self) -> None:
        parts = self.compute_us + self.exposed_comm_us + self.host_bound_us + self.idle_us
        if abs(parts - self.total_us) > 1e-6 * max(1.0, self.total_us):
            raise ValueError(
                f"rank {self.rank}: compute_us={self.compute_us} + exposed_comm_us={self.exposed_comm_us} + "
                f"host_bound_us={self.host_bound_us} + idle_us={self.idle_us} = {parts} != total_us={self.total_us}"
            )


def union_length_us(starts: np.ndarray, ends: np.ndarray) -> float:
    """Length of the union of intervals [starts[i], ends[i]), microseconds."""
    if len(starts) == 0:
        return 0.0
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    covered = np.concatenate(([-np.inf], np.maximum.accumulate(e)[:-1]))
    return float(np.clip(e - np.maximum(s, covered), 0.0, None).sum())


def rank_breakdown(
    *, rank: int, members: int, total_us: float, is_compute: np.ndarray, is_comm: np.ndarray,
    issue_us: np.ndarray, start_us: np.ndarray, end_us: np.ndarray, window_start_us: float = 0.0,
) -> RankBreakdown:
    """Split a rank's span into the buckets of `RankBreakdown` (all arrays are per trace row).

    The span is [window_start_us, window_start_us + total_us]: from the start of the simulation, or
    from the end of an iteration for the steady state (pass the rows of the later iterations only;
    GPU intervals are clipped to the window)."""
    gpu = is_compute | is_comm
    start_us = np.maximum(start_us, window_start_us)
    end_us = np.maximum(end_us, window_start_us)
    compute_us = union_length_us(start_us[is_compute], end_us[is_compute])
    comm_us = union_length_us(start_us[is_comm], end_us[is_comm])
    busy_us = union_length_us(start_us[gpu], end_us[gpu])
    # Gaps in GPU activity, each charged to the op that ends it: host-bound if that op started the
    # moment it was issued.
    s, e, issued = start_us[gpu], end_us[gpu], issue_us[gpu]
    order = np.argsort(s, kind="stable")
    s, e, issued = s[order], e[order], issued[order]
    covered = np.concatenate(([window_start_us], np.maximum.accumulate(e)[:-1])) if len(s) else np.zeros(0)
    gaps = np.clip(s - covered, 0.0, None)
    host_limited = s <= issued + 1e-9
    gpu_end = float(e.max()) if len(e) else window_start_us
    tail_us = max(0.0, window_start_us + total_us - gpu_end)
    host_bound_us = float(gaps[host_limited].sum()) + tail_us
    idle_us = float(gaps[~host_limited].sum())
    return RankBreakdown(
        rank=rank, members=members, total_us=total_us, compute_us=compute_us,
        exposed_comm_us=busy_us - compute_us, host_bound_us=host_bound_us, idle_us=idle_us, comm_us=comm_us,
    )
