"""`CollectiveMatcher`: starts a collective once every member rank has issued it.

A collective call is identified by (group_name, group_seq); a send/recv pair by (group, src, dst,
n-th message from src to dst). A call starts when the last member registers it, at the latest of the
members' ready times (issued by the host and reached by its stream), and lasts what the NCCL cost
model says. With rank classes, a member is represented by its class's representative rank, whose
trace stands for every member.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from maya.simulator.rank_trace import CommCall, MatchKey

if TYPE_CHECKING:
    from maya.simulator.rank_state import RankState


class CollectiveMismatchError(ValueError):
    """Ranks' collectives can never match: different calls, or a member never issues one."""


@dataclass(slots=True)
class PendingCall:
    """A call some members have registered and others have not yet."""

    first: CommCall
    """The first registrant's call, which every other registration must agree with."""
    first_rank: int
    """The rank that registered `first`."""
    needed: set[tuple[int, str]]
    """(representative rank, role) pairs still to register."""
    ready_us: float = 0.0
    """Latest ready time among the registrants so far, microseconds."""
    registrations: list[tuple[RankState, int, int]] = field(default_factory=list)
    """(rank state, row of this call, head row of its stream item) per registrant."""


class CollectiveMatcher:
    """Pairs up the ranks' collective calls and prices them."""

    def __init__(self, representative: dict[int, int], duration_us: Callable[[CommCall], float]) -> None:
        self.representative = representative
        self.duration_us = duration_us
        self.pending: dict[MatchKey, PendingCall] = {}

    def register(self, state: RankState, call: CommCall, head_row: int, ready_us: float) -> list:
        """Record that `state`'s rank reached `call` at `ready_us`; returns CommDone events if it is complete."""
        entry = self.pending.get(call.key)
        if entry is None:
            needed = set()
            for rank, role in call.participants:
                if rank not in self.representative:
                    raise CollectiveMismatchError(
                        f"{_describe(call)} on rank {state.rank}: member rank {rank} is outside the job "
                        f"(world_size={len(self.representative)})"
                    )
                needed.add((self.representative[rank], role))
            entry = self.pending[call.key] = PendingCall(first=call, first_rank=state.rank, needed=needed)
        else:
            _check_same(entry, call, state.rank)
        member = (state.rank, call.role)
        if member not in entry.needed:
            raise CollectiveMismatchError(
                f"{_describe(call)}: rank {state.rank} issued it twice, or is not one of its members"
            )
        entry.needed.discard(member)
        entry.ready_us = max(entry.ready_us, ready_us)
        entry.registrations.append((state, call.row, head_row))
        if entry.needed:
            return []
        del self.pending[call.key]
        return self._start(entry)

    def _start(self, entry: PendingCall) -> list:
        from maya.simulator.comm_done import CommDone

        start_us = entry.ready_us
        end_us = start_us + self.duration_us(entry.first)
        events = []
        for state, row, head_row in entry.registrations:
            state.comm_started(row, start_us, end_us)
            events.append(CommDone(time_us=end_us, state=state, head_row=head_row))
        return events

    def check_all_matched(self, states: dict[int, RankState]) -> None:
        """Raise `CollectiveMismatchError` naming the first unmatched call of each group, if any."""
        if not self.pending:
            return
        first_per_group: dict[str, PendingCall] = {}
        for entry in self.pending.values():
            group = entry.first.group_name
            best = first_per_group.get(group)
            if best is None or entry.first.group_seq < best.first.group_seq:
                first_per_group[group] = entry
        lines = []
        for group in sorted(first_per_group):
            entry = first_per_group[group]
            issued = sorted({s.rank for s, _, _ in entry.registrations})
            missing = sorted({rank for rank, _ in entry.needed})
            why = "; ".join(_why_missing(states[r], entry.first) for r in missing if r in states)
            lines.append(
                f"{_describe(entry.first)}: issued by rank(s) {issued}, never matched by rank(s) {missing} ({why})"
            )
        raise CollectiveMismatchError("collectives that can never match:\n  " + "\n  ".join(lines))


def _describe(call: CommCall) -> str:
    where = f"group {call.group_name!r} ranks {list(call.group_ranks)}"
    if call.key[0] == "p2p":
        _, _, src, dst, nth = call.key
        return f"{call.op.value} #{nth} from rank {src} to rank {dst} of {call.message_bytes} bytes on {where}"
    return f"call #{call.group_seq} ({call.op.value} of {call.message_bytes} bytes) on {where}"


def _check_same(entry: PendingCall, call: CommCall, rank: int) -> None:
    first = entry.first
    same_op = first.op == call.op or first.key[0] == "p2p"
    if same_op and first.message_bytes == call.message_bytes and first.group_ranks == call.group_ranks:
        return
    raise CollectiveMismatchError(
        f"mismatched collectives on group {first.group_name!r} call #{first.group_seq}: rank "
        f"{entry.first_rank} issued {first.op.value} of {first.message_bytes} bytes over ranks "
        f"{list(first.group_ranks)}, rank {rank} issued {call.op.value} of {call.message_bytes} bytes "
        f"over ranks {list(call.group_ranks)}"
    )


def _why_missing(state: RankState, call: CommCall) -> str:
    """Explain why `state`'s rank never registered `call`: it never issues it, or it is stuck before it."""
    trace = state.trace
    has_it = any(trace.comm[row].key == call.key for row in trace.group_calls.get(call.group_name, ()))
    if not has_it:
        calls = trace.group_calls.get(call.group_name, [])
        return f"rank {state.rank} issues {len(calls)} call(s) on group {call.group_name!r} and never this one"
    return f"rank {state.rank} never reaches it: {state.describe_blocked()}"
