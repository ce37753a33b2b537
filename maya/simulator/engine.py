"""`Engine`: a SimPy-style discrete-event loop over a heap of (time_us, priority, seq, event).

An event is any object with a `handle()` method that returns the events it creates. `seq` is a
counter, so events with equal time and priority run in the order they were scheduled and every run
is deterministic.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol


class Event(Protocol):
    """Something that happens at `time_us`; handling it returns the events it causes."""

    time_us: float
    """When the event happens, microseconds from the start of the simulation."""
    priority: int
    """Tie-break at equal time: lower runs first."""

    def handle(self) -> Iterable[Event]:
        """Apply the event to the simulation state and return the events it creates."""
        ...


@dataclass(slots=True)
class Engine:
    """Runs events in (time_us, priority, seq) order until none are left."""

    now_us: float = 0.0
    """Time of the event being handled, microseconds."""
    handled: int = 0
    """Events handled so far."""
    _heap: list[tuple[float, int, int, Event]] = field(default_factory=list)
    _seq: int = 0

    def schedule(self, events: Iterable[Event]) -> None:
        """Add events to the heap; an event in the past is a bug in its handler."""
        for event in events:
            if event.time_us < self.now_us:
                raise RuntimeError(f"{event!r} scheduled at {event.time_us} us, before now={self.now_us} us")
            heapq.heappush(self._heap, (event.time_us, event.priority, self._seq, event))
            self._seq += 1

    def run(self, initial: Iterable[Event] = ()) -> float:
        """Handle events until the heap is empty; returns the time of the last one, microseconds."""
        self.schedule(initial)
        heap = self._heap
        while heap:
            self.now_us, _, _, event = heapq.heappop(heap)
            self.handled += 1
            self.schedule(event.handle())
        return self.now_us
