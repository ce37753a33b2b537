"""`HostRun`: a rank's host thread starts (or resumes after a sync) issuing its trace."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from maya.simulator.rank_state import RankState


@dataclass(slots=True)
class HostRun:
    """The host of `state`'s rank issues rows until it blocks on a sync or runs out of rows."""

    time_us: float
    """When the host resumes, microseconds."""
    state: RankState
    """The rank whose host runs."""
    priority: int = 1
    """Host wake-ups run after the completions that happen at the same time."""

    def handle(self) -> list:
        """Issue rows from the host's current position."""
        return self.state.run_host(self.time_us)
