"""Emulated `torch.cuda.Stream` and `torch.cuda.Event`: they record ordering, not time.

Each call that orders GPU work (record, wait, synchronize) becomes a trace row; the simulator
gives them their meaning. `Event.elapsed_time` returns the time Maya predicts between the two records
when the caller installed a predictor (`maya.event_timing`, as `maya emulate` does), else 0.0.
"""

from __future__ import annotations

import torch

from maya.emulator import state as st
from maya.emulator.events import EventKind


class EmulatedStream:
    """Stands in for torch.cuda.Stream; `stream_id` 0 is the default stream."""

    def __init__(self, device: object = None, priority: int = 0, *, stream_id: int | None = None, **kwargs: object) -> None:
        s = st.active()
        if stream_id is None:
            stream_id = s.next_stream_id
            s.next_stream_id += 1
        self.stream_id = stream_id
        self.priority = priority
        self.device_index = s.config.local_rank

    @property
    def device(self) -> torch.device:
        return torch.device("cuda", self.device_index)

    @property
    def cuda_stream(self) -> int:
        return self.stream_id

    def wait_event(self, event: EmulatedEvent) -> None:
        event.wait(self)

    def wait_stream(self, stream: EmulatedStream) -> None:
        self.wait_event(stream.record_event())

    def record_event(self, event: EmulatedEvent | None = None) -> EmulatedEvent:
        event = event if event is not None else EmulatedEvent()
        event.record(self)
        return event

    def query(self) -> bool:
        return True

    def is_capturing(self) -> bool:
        return False

    @property
    def device_type(self) -> int:
        return 1  # DeviceType.CUDA

    def synchronize(self) -> None:
        st.active().add_row(EventKind.SYNC, "cuda:stream_synchronize", stream=self.stream_id)

    def __enter__(self) -> EmulatedStream:
        self._prev = st.active().current_stream
        st.active().current_stream = self.stream_id
        return self

    def __exit__(self, *exc: object) -> None:
        st.active().current_stream = self._prev

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EmulatedStream) and other.stream_id == self.stream_id

    def __hash__(self) -> int:
        return hash(("maya-stream", self.stream_id))

    def __repr__(self) -> str:
        return f"<torch.cuda.Stream device=cuda:{self.device_index} cuda_stream={self.stream_id} (emulated)>"


class EmulatedEvent:
    """Stands in for torch.cuda.Event."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False, **kwargs: object) -> None:
        s = st.active()
        self.event_id = s.next_event_id
        s.next_event_id += 1
        self.enable_timing = enable_timing
        self.recorded = False

    def record(self, stream: EmulatedStream | None = None) -> None:
        s = st.active()
        stream_id = s.current_stream if stream is None else stream.stream_id
        self.row = len(s.rows)
        self.stream_id = stream_id
        s.add_row(EventKind.EVENT_RECORD, "cuda:event_record", stream=stream_id, event_id=self.event_id)
        self.recorded = True

    def wait(self, stream: EmulatedStream | None = None) -> None:
        s = st.active()
        stream_id = s.current_stream if stream is None else stream.stream_id
        s.add_row(EventKind.STREAM_WAIT, "cuda:stream_wait_event", stream=stream_id, event_id=self.event_id)

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        st.active().add_row(EventKind.SYNC, "cuda:event_synchronize", event_id=self.event_id)

    def elapsed_time(self, end_event: EmulatedEvent) -> float:
        if not (self.recorded and end_event.recorded):
            raise RuntimeError("elapsed_time: both events must have been recorded (emulated CUDA)")
        s = st.active()
        if s.elapsed_time_ms is None or end_event.row <= self.row:
            return 0.0
        return float(s.elapsed_time_ms(s.rows, self.row, end_event.row, self.stream_id))

    def __repr__(self) -> str:
        return f"<torch.cuda.Event {self.event_id} (emulated)>"


class StreamContext:
    """`torch.cuda.stream(s)`: makes `s` current inside the block (None leaves it unchanged)."""

    def __init__(self, stream: EmulatedStream | None) -> None:
        self.stream = stream

    def __enter__(self) -> EmulatedStream | None:
        if self.stream is not None:
            self.stream.__enter__()
        return self.stream

    def __exit__(self, *exc: object) -> None:
        if self.stream is not None:
            self.stream.__exit__(*exc)
