"""`SimulationResult`: what one simulation predicts."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import pandas as pd
import pyarrow as pa

from maya.simulator.breakdown import RankBreakdown


@dataclass(frozen=True, kw_only=True, slots=True, eq=False)
class SimulationResult:
    """Iteration times, per-rank breakdowns, top ops/modules and per-rank timelines. Times in microseconds."""

    world_size: int
    """Ranks in the job, representatives and the members they stand for."""
    iteration_times_us: tuple[float, ...]
    """Per iteration, the slowest rank's time from the end of its previous iteration."""
    rank_iteration_ends_us: dict[int, tuple[float, ...]]
    """Representative rank -> when it finished each iteration."""
    breakdown: dict[int, RankBreakdown]
    """Representative rank -> where its time went, from `from_iteration` on."""
    top_ops: pd.DataFrame
    """GPU time per op over all ranks: columns op, kind, total_us, count, share; largest first."""
    top_modules: pd.DataFrame
    """GPU time per module path over all ranks, the paths that differ only in layer indices summed
    (`blocks.0.mlp` and `blocks.1.mlp` as `blocks.*.mlp`, `simulate.layer_pattern`): columns module,
    instances (module paths summed), total_us, count, share; largest first. An op is counted in the
    innermost module running when it was issued (its backward in the module of its forward); `<top>`
    is GPU time in no submodule: the outermost module's own forward code, and work outside every
    module (typically the loss, the optimizer, gradient clipping)."""
    phases: pd.DataFrame
    """GPU time per phase of the training step over all ranks (the trace's `phase`: forward, backward,
    optimizer, other; empty for a trace without phases): columns phase, total_us, count, share;
    largest first."""
    from_iteration: int
    """The first iteration `breakdown`, `top_ops` and `top_modules` count: 1 (the steady state,
    without the first iteration's set-up) when there is GPU work after the first iteration end, else 0
    (the whole run)."""
    to_iteration: dict[int, int]
    """Representative rank -> one past the last iteration that `breakdown`, `top_ops` and
    `top_modules` count: the iterations it completed (work after its last iteration end, such as a
    final evaluation or checkpoint, is in none), 1 for a trace without iteration ends."""
    timelines: dict[int, pa.Table]
    """Representative rank -> one row per trace row: seq, iteration, kind, op, module, phase (the trace's:
    forward, backward, optimizer, other; empty when the trace has none), allocated_bytes and
    reserved_bytes (the emulated GPU's memory after the row; null when the trace has none), stream,
    host_start_us, issue_us, start_us, end_us (GPU interval; host wait interval for syncs; NaN if none)."""
    rank_to_representative: dict[int, int]
    """Global rank -> the rank whose trace it shares."""
    events_handled: int
    """Heap events the engine handled (collective completions and host wake-ups)."""

    def __post_init__(self) -> None:
        if any(t < 0 for t in self.iteration_times_us):
            raise ValueError(f"negative iteration time in {self.iteration_times_us}")

    @property
    def median_iteration_us(self) -> float:
        """Median of `iteration_times_us`, microseconds."""
        return statistics.median(self.iteration_times_us)

    def timeline(self, rank: int) -> pd.DataFrame:
        """The timeline of `rank` (a representative, or any rank via its representative) as a DataFrame."""
        return self.timelines[self.rank_to_representative[rank]].to_pandas()

    @property
    def slowest_rank(self) -> int:
        """The representative rank with the largest total time; among ranks that finish together
        (they end in the same collective), the one that waited least: the others waited for it."""
        return max(self.breakdown.values(), key=lambda b: (b.total_us, -b.idle_us)).rank
