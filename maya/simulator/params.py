"""`SimulationParams`: the calibration knobs of one simulation."""

from __future__ import annotations

from dataclasses import dataclass, field

from maya.estimator.collective import CollectiveModelParams
from maya.simulator.host_model import HostModel


@dataclass(frozen=True, kw_only=True, slots=True)
class SimulationParams:
    """Host, overlap and NCCL calibration; the defaults are uncalibrated."""

    host: HostModel = field(default_factory=HostModel)
    """Host cost per op when the trace has no `host_us` column."""
    overlap_slowdown: float = 1.0
    """A kernel runs this many times slower while a collective runs on its rank (1.0: uncalibrated)."""
    collective: CollectiveModelParams = field(default_factory=CollectiveModelParams)
    """NCCL cost-model calibration."""
    kernel_gap_us: float = 0.0
    """A stream's kernel starts at least this long after the previous one on it ends (the GPU front
    end's launch gap, microseconds; 0.0: uncalibrated)."""
    graph_kernel_gap_us: float | None = None
    """The same gap before a kernel a CUDA graph's replay launched (a trace row whose `graph_replay`
    column is true), whose launch the front end has already set up; None: `kernel_gap_us`."""

    def __post_init__(self) -> None:
        for name in ("kernel_gap_us", "graph_kernel_gap_us"):
            value = getattr(self, name)
            if value is not None and not value >= 0.0:
                raise ValueError(f"{name}={value} must be >= 0")
        if not self.overlap_slowdown >= 1.0:
            raise ValueError(f"overlap_slowdown={self.overlap_slowdown} must be >= 1.0")
