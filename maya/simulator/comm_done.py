"""`CommDone`: a collective (or one send/recv of a batch) finishes on one rank."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from maya.simulator.rank_state import RankState


@dataclass(slots=True)
class CommDone:
    """The stream item headed by `head_row` has one fewer call in flight; it frees the stream when none are left."""

    time_us: float
    """When the call ends, microseconds."""
    state: RankState
    """The rank it ends on."""
    head_row: int
    """Row of the stream item (a collective, or the first send/recv of a batch) it belongs to."""
    priority: int = 0
    """Completions run before host wake-ups at the same time."""

    def handle(self) -> list:
        """Advance the stream past the item once all its calls are done."""
        return self.state.comm_done(self.head_row, self.time_us)
