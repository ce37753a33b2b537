"""`TrialOutcome`: what evaluating one configuration found, as a trial reports it to Ray Tune."""

from __future__ import annotations

import enum
import json
from dataclasses import asdict, dataclass, field


class TrialStatus(str, enum.Enum):
    """How a configuration ended."""

    OK = "ok"
    """It runs: predicted step time, cost and memory are known."""
    INFEASIBLE = "infeasible"
    """It was emulated and does not fit: out of memory, or over the study's memory limit."""
    PRUNED = "pruned"
    """Ruled out before emulation (divisibility, world size, the study's check)."""
    FAILED = "failed"
    """The script or Maya raised; `error` holds the traceback."""


class CacheUse(str, enum.Enum):
    """Where a trial's figures came from."""

    MISS = "miss"
    """The script was emulated in this trial."""
    HIT = "hit"
    """Figures for the same trace on the same cluster topology were cached."""
    RESIMULATED = "resimulated"
    """A cached trace was simulated again on this trial's cluster; no emulation."""
    DOMINATED = "dominated"
    """Infeasible without emulation: a configuration needing no more memory per GPU was over memory
    (maya.tune.memory_dominance)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class TrialOutcome:
    """One evaluated configuration (the figures of a trial's single `tune.report`)."""

    status: TrialStatus
    """How it ended."""
    reason: str | None = None
    """Why it was pruned, infeasible or failed (one line)."""
    objective: float
    """The value the search minimises (`INFEASIBLE_OBJECTIVE` unless status is ok)."""
    step_time_ms: float | None = None
    """Predicted time of one optimizer step at the global batch, milliseconds."""
    time_to_train_s: float | None = None
    """Predicted wall time to train the fixed work, seconds."""
    cost_usd: float | None = None
    """Predicted cost to train the fixed work, US dollars."""
    peak_allocated_bytes: int | None = None
    """Peak allocated GPU memory of the emulated rank(s), bytes."""
    peak_reserved_bytes: int | None = None
    """Peak reserved (caching allocator) GPU memory, bytes."""
    world_size: int | None = None
    """GPUs of the job."""
    gpus_per_node: int | None = None
    """GPUs per node."""
    dp: int | None = None
    """Data-parallel degree."""
    accum: int | None = None
    """Gradient accumulation steps."""
    accum_emulated: str | None = None
    """The two smaller micro-batch counts ("8,16") whose emulations `step_time_ms` and the peaks were
    extrapolated from (maya.tune.accum_extrapolation); None: `accum` itself was emulated."""
    depth_emulated: str | None = None
    """The two smaller depths ("4,8") whose emulations the figures were extrapolated from
    (maya.tune.depth_extrapolation); None: the full depth was emulated."""
    gpu: str | None = None
    """GPU catalog key."""
    price_per_gpu_hour_usd: float | None = None
    """Price per GPU-hour used for the cost, US dollars."""
    cache: CacheUse | None = None
    """Where the figures came from; None when pruned."""
    argv: str | None = None
    """The script's arguments, space-separated."""
    error: str | None = None
    """Traceback of a failed configuration (or the out-of-memory traceback)."""
    evaluate_s: float = 0.0
    """Wall time this trial spent, seconds."""
    breakdown_ms: dict = field(default_factory=dict)
    """Compute / exposed communication / host-bound / idle time of the emulated run, milliseconds."""
    top_ops: list = field(default_factory=list)
    """The ops with the most simulated GPU time."""
    timeline: str | None = None
    """Path of the Perfetto timeline on the node that evaluated it."""
    node_id: str | None = None
    """Ray node that holds `timeline` and the trace."""

    def to_metrics(self) -> dict:
        """A dict for `tune.report`: enums as their values, `top_ops` as a JSON string (Tune's
        TensorBoard logger only takes numbers and flat lists)."""
        d = asdict(self)
        d["top_ops"] = json.dumps(self.top_ops)
        d["status"] = self.status.value
        d["cache"] = self.cache.value if self.cache is not None else None
        return d
