"""`NcclRuntime`: how the emulated NCCL issues, orders and waits for collectives on CUDA streams.

It follows ProcessGroupNCCL (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp):
- every process group runs its collectives on its own stream, and point-to-point calls on a stream
  per peer pair;
- before a call, that stream waits for the current stream (`syncStream`), so the call sees the
  inputs the script produced;
- the call's end is an event on that stream; `work.wait()` makes the *current* stream wait for it,
  and a call made with `async_op=False` waits at once;
- calls between `start_coalescing` and `end_coalescing` (`batch_isend_irecv`, coalesced
  collectives) are posted together as one NCCL group: consecutive rows on one stream.

Some waits happen where Maya cannot see them: the DDP reducer waits for its bucket all-reduces
through C++ futures. So every storage a call writes stays *pending* until a visible wait covers
it, and the first GPU op that touches a pending storage makes its stream wait for the call first.
A correct NCCL program never reads a buffer before waiting for it, so this puts the wait no later
than the real one.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field

import torch

from maya.emulator import state as st
from maya.emulator.attrs import tensor_meta
from maya.emulator.events import EventKind, Phase

BARRIER_BYTES = 4
"""ProcessGroupNCCL implements `barrier` as an all-reduce of a one-element float32 tensor."""


@dataclass(frozen=True, kw_only=True, slots=True)
class CommCall:
    """One NCCL call as the script issued it."""

    op: str
    """NCCL operation: all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all,
    send, recv, barrier, gather, scatter."""
    group_name: str
    """Process group name (c10d's, identical on every rank)."""
    group_ranks: tuple[int, ...]
    """Global ranks of the group, in group-rank order."""
    message_bytes: int
    """nccl-tests "size": the all_reduce buffer, the all_gather output, the reduce_scatter input."""
    inputs: tuple[torch.Tensor, ...] = ()
    """Tensors the call reads."""
    outputs: tuple[torch.Tensor, ...] = ()
    """Tensors the call writes (they stay pending until waited for)."""
    reduce_op: str | None = None
    """"sum", "avg", "max", ... for reductions."""
    peer: int | None = None
    """Global rank of the other side of a send/recv."""
    root: int | None = None
    """Global rank of the root of broadcast/reduce/gather/scatter."""


@dataclass(slots=True)
class _Batch:
    """Calls posted between start_coalescing and end_coalescing."""

    calls: list[CommCall] = field(default_factory=list)
    async_op: bool = True


class NcclRuntime:
    """Per-rank NCCL state: streams, per-group sequence numbers, pending storages."""

    def __init__(self, state: st.EmulationState, tracker) -> None:
        self.state = state
        self.tracker = tracker
        self.streams: dict[tuple, int] = {}
        """(group name, "coll") or (group name, low rank, high rank) -> emulated stream id."""
        self.group_seq: dict[tuple, int] = {}
        """(group,) or (group, sender, receiver) -> number of calls so far."""
        self.pending: dict[int, int] = {}
        """Storage key -> event id of the call that writes it, until a wait covers it."""
        self.batches: dict[str, _Batch] = {}
        """Group name -> the open coalescing batch of that group."""
        self.blocking_p2p = 0
        """Above 0 inside `dist.send` / `dist.recv`, whose calls are recorded with async_op=False."""

    # -- issuing ---------------------------------------------------------------------------------

    def issue(self, call: CommCall, *, async_op: bool) -> int:
        """Record `call` (or add it to its group's open batch); returns the end event id (-1 if batched)."""
        if self.state.values is not None:  # the call writes them: values known before mostly are not any more
            root = call.root == self.state.config.rank
            carries = call.op == "broadcast" and call.root is not None and bool(call.outputs)  # not an object call's
            if carries and root:
                self._publish_broadcast(call)
            self.state.values.collective(call.op, call.reduce_op, call.outputs, root=root)
            if carries and not root:
                self._take_broadcast(call)
        batch = self.batches.get(call.group_name)
        if batch is not None:
            batch.calls.append(call)
            return -1
        return self._post([call], async_op=async_op)

    def _publish_broadcast(self, call: CommCall) -> None:
        """The root's values of a broadcast, where it knows them all, for the ranks that receive it
        (`maya.emulator.object_mailbox`)."""
        known = [self.state.values.exact(t) for t in call.outputs]
        values = known if known and all(k is not None for k in known) else None
        self.state.mailbox.publish(call.group_ranks, call.root, pickle.dumps(values))

    def _take_broadcast(self, call: CommCall) -> None:
        """A non-root rank's outputs of a broadcast: the root's values where its emulation published
        them, unknown where it did not know them; without a publication, as `ValueHints.collective` left them."""
        payload = self.state.mailbox.published(call.group_ranks, call.root)
        if payload is None:
            return
        values = pickle.loads(payload)
        for i, t in enumerate(call.outputs):
            if values is not None and i < len(values):
                self.state.values.set_exact(t, values[i])
            else:
                self.state.values.written(t)

    def start_batch(self, group_name: str) -> None:
        self.batches[group_name] = _Batch()

    def end_batch(self, group_name: str) -> int:
        """Post the batch opened on `group_name`; returns its end event id (-1 when empty)."""
        batch = self.batches.pop(group_name, None)
        if batch is None or not batch.calls:
            return -1
        return self._post(batch.calls, async_op=True)

    def _post(self, calls: list[CommCall], *, async_op: bool) -> int:
        state = self.state
        phase, module = self.tracker.current()
        if state.in_optimizer and phase is not Phase.BACKWARD:
            phase = Phase.OPTIMIZER
        current = state.current_stream
        stream = self._stream(calls[0])
        # syncStream: the NCCL stream waits for the work the script queued before the call.
        ready = self._new_event()
        state.add_row(EventKind.EVENT_RECORD, "nccl:ready", phase=phase, module=module, stream=current, event_id=ready)
        state.add_row(EventKind.STREAM_WAIT, "nccl:ready", phase=phase, module=module, stream=stream, event_id=ready)
        for call in calls:
            seq = self.next_seq(call.op, call.group_name, call.peer)
            state.add_row(
                EventKind.COLLECTIVE,
                f"nccl:{call.op}",
                phase=phase,
                module=module,
                stream=stream,
                inputs=tuple(tensor_meta(t) for t in call.inputs),
                outputs=tuple(tensor_meta(t) for t in call.outputs),
                attrs=({"root": call.root} if call.root is not None else None),
                collective=(
                    call.group_name, list(call.group_ranks), seq, int(call.message_bytes), call.reduce_op,
                    call.peer, async_op,
                ),
            )
        done = self._new_event()
        state.add_row(EventKind.EVENT_RECORD, "nccl:done", phase=phase, module=module, stream=stream, event_id=done)
        for call in calls:
            for t in call.outputs:
                key = _storage_key(t)
                if key is not None:
                    self.pending[key] = done
        return done

    def next_seq(self, op: str, group_name: str, peer: int | None) -> int:
        """The sequence number of the next call `op` on `group_name` (to `peer`, for send and recv).

        Collectives are numbered per group; point-to-point messages per (group, sender, receiver)."""
        me = self.state.config.rank
        if peer is None:
            key: tuple = (group_name,)
        elif op == "send":
            key = (group_name, me, peer)
        else:
            key = (group_name, peer, me)
        seq = self.group_seq.get(key, 0)
        self.group_seq[key] = seq + 1
        return seq

    def _stream(self, call: CommCall) -> int:
        if call.peer is None:
            key: tuple = (call.group_name, "coll")
        else:
            me = self.state.config.rank
            key = (call.group_name, min(me, call.peer), max(me, call.peer))
        stream = self.streams.get(key)
        if stream is None:
            stream = self.streams[key] = self.state.next_stream_id
            self.state.next_stream_id += 1
        return stream

    def _new_event(self) -> int:
        event = self.state.next_event_id
        self.state.next_event_id += 1
        return event

    # -- waiting ---------------------------------------------------------------------------------

    def wait(self, event_id: int, tensors: tuple[torch.Tensor, ...] = ()) -> None:
        """`work.wait()`: the current stream waits for the call that ends with `event_id`."""
        if event_id < 0:
            return
        self.state.add_row(EventKind.STREAM_WAIT, "nccl:wait", stream=self.state.current_stream, event_id=event_id)
        if self.pending:
            for key in [k for k, e in self.pending.items() if e == event_id]:
                del self.pending[key]

    def wait_for_tensors(self, tensors: list[torch.Tensor]) -> None:
        """Before a GPU op touches `tensors`, wait for any call still writing one of them."""
        for t in tensors:
            key = _storage_key(t)
            if key is None:
                continue
            event = self.pending.get(key)
            if event is not None:
                self.wait(event)

    def barrier_sync(self) -> None:
        """ProcessGroupNCCL's barrier blocks the host until the device finishes."""
        self.state.add_row(EventKind.SYNC, "cuda:synchronize")


def _storage_key(t: object) -> int | None:
    if not isinstance(t, torch.Tensor):
        return None
    try:
        return t.untyped_storage()._cdata
    except (RuntimeError, NotImplementedError):
        return None
