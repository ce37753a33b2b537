"""`HostModel`: what the CPU thread of a rank pays to issue each traced operation."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True, slots=True)
class HostModel:
    """Constant per-op host costs, used for traces without a `host_us` column. Uncalibrated defaults."""

    launch_us: float = 5.0
    """CPU time to launch one kernel, memcpy or NCCL call through PyTorch eager dispatch, microseconds."""
    other_us: float = 1.0
    """CPU time of an event record, stream wait, synchronize call or iteration marker, microseconds."""

    def __post_init__(self) -> None:
        if self.launch_us < 0 or self.other_us < 0:
            raise ValueError(f"host costs must be >= 0: launch_us={self.launch_us}, other_us={self.other_us}")
