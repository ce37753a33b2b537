"""The heap engine: (time, priority, seq) order and handler-returned events."""

from dataclasses import dataclass, field

import pytest

from maya.simulator.engine import Engine


@dataclass
class Tick:
    time_us: float
    priority: int
    name: str
    log: list = field(repr=False)
    children: list = field(default_factory=list, repr=False)

    def handle(self):
        self.log.append(self.name)
        return self.children


def test_order_is_time_then_priority_then_schedule_order():
    log = []
    late = Tick(5.0, 0, "child", log)
    events = [Tick(3.0, 1, "b", log), Tick(3.0, 0, "a", log, [late]), Tick(3.0, 1, "c", log), Tick(1.0, 9, "first", log)]
    assert Engine().run(events) == 5.0
    assert log == ["first", "a", "b", "c", "child"]


def test_event_in_the_past_is_an_error():
    log = []
    with pytest.raises(RuntimeError, match="before now"):
        Engine().run([Tick(5.0, 0, "x", log, [Tick(1.0, 0, "past", log)])])
