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

    def __post_init__(self) -> None:
        if not self.kernel_gap_us >= 0.0:
            raise ValueError(f"kernel_gap_us={self.kernel_gap_us} must be >= 0")
        if not self.overlap_slowdown >= 1.0:
            raise ValueError(f"overlap_slowdown={self.overlap_slowdown} must be >= 1.0")
