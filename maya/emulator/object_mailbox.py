"""Objects one emulated rank sends another (`send_object_list` / `recv_object_list`).

Every rank is emulated on its own, so an object a rank receives was sent in another rank's
emulation. The world emulator (`maya.world.world_emulation`) carries them: each emulation hands back
the objects it sent (`ObjectMailbox.sent`) and starts with every object sent so far (its inbox). A
receive whose object is not in the inbox stops the emulation (`ObjectNotSentYet`); the world
emulator then emulates the sender and emulates the receiver again.

torch.distributed.pipelining needs this: a `PipelineStage` built without example inputs and outputs
learns its input shapes from the previous stage's metadata object and its output gradients' shapes
from the next stage's (dynamic shape inference, torchtitan's pipelines). With stage 0 on rank 0, the
world emulator runs rank 0 until it waits for stage 1's backward metadata, then stage 1 (which
receives stage 0's forward metadata) until it waits for stage 2's, and so on to the last stage, then
back: each stage's second emulation finds what it waits for.

A broadcast's values travel the same way where the root knows them exactly (a small flag or count:
Megatron's rank 0 broadcasts its "train, validate, test" flags to its tensor-parallel peers, which
had otherwise read zeros and skipped training): the root's emulation publishes them (`publish`,
or that it did not know them), and a non-root rank takes them (`published`) when the root's
emulation, or one at its position, ran before; a non-root rank never waits for them.

An object is looked up by where its sender and receiver sit in the group (`message_key`), so a rank
whose sender was never emulated reads what an emulated rank at the same position of a group of the
same shape sent: the sender's class representative, whose trace stands for the sender's (the rank
classes of `maya.world.rank_classes`). Within one emulation the objects are those of a symmetric
world, as the object collectives' are (`maya.emulator.distributed`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

MessageKey = tuple[tuple[int, ...], int, int, int]
"""(the group's shape: its global ranks less its first, sender's position, receiver's position,
how many objects that sender had sent that receiver in that group before)."""


def message_key(group_ranks: tuple[int, ...], src: int, dst: int | None, count: int) -> MessageKey:
    """The key of the `count`-th object list `src` sends `dst` (global ranks; None: every member, a
    broadcast's position -1) in the group of `group_ranks`."""
    shape = tuple(r - group_ranks[0] for r in group_ranks)
    return shape, group_ranks.index(src), -1 if dst is None else group_ranks.index(dst), count


@dataclass(frozen=True, slots=True)
class ObjectMessage:
    """One `send_object_list` call: its key, its sender (global rank) and the objects' pickles."""

    key: MessageKey
    src: int
    pickles: tuple[bytes, ...]


class ObjectNotSentYet(RuntimeError):
    """A receive whose sender has not been emulated yet (the world emulator emulates it, then this
    rank again); outside a world emulation, or when the sender never sends, the message names both."""

    def __init__(self, src: int, dst: int, key: MessageKey) -> None:
        self.src, self.dst, self.key = src, dst, key
        super().__init__(
            f"rank {dst} receives an object list from rank {src} (object list {key[3] + 1} between them in "
            f"their group), which no emulated rank has sent yet: the world emulator emulates rank {src} first "
            "and this rank again; if this reaches you, the sender's emulation never sent it")


@dataclass(slots=True)
class ObjectMailbox:
    """One emulated rank's objects: those sent to it so far by any emulation, and those it sends."""

    inbox: dict[MessageKey, dict[int, tuple[bytes, ...]]] = field(default_factory=dict)
    """key -> {sender: pickles}: every message of the world so far."""
    sent: list[ObjectMessage] = field(default_factory=list)
    """What this emulation sent, in order."""
    waiting: ObjectNotSentYet | None = None
    """The receive that stopped this emulation, if one did."""
    _counts: dict[tuple[tuple[int, ...], int, int], int] = field(default_factory=dict)

    @classmethod
    def holding(cls, messages: list[ObjectMessage] | tuple[ObjectMessage, ...]) -> ObjectMailbox:
        box = cls()
        for m in messages:
            box.inbox.setdefault(m.key, {})[m.src] = m.pickles
        return box

    def next_key(self, group_ranks: tuple[int, ...], src: int, dst: int | None) -> MessageKey:
        """The key of the next object list between `src` and `dst` in this group (counted per direction),
        or with `dst` None of the group's next broadcast (every member issues each: counted per group)."""
        pair = (group_ranks, -1, -1) if dst is None else (group_ranks, src, dst)
        count = self._counts.get(pair, 0)
        self._counts[pair] = count + 1
        return message_key(group_ranks, src, dst, count)

    def send(self, group_ranks: tuple[int, ...], src: int, dst: int, pickles: tuple[bytes, ...]) -> None:
        self.sent.append(ObjectMessage(self.next_key(group_ranks, src, dst), src, pickles))

    def publish(self, group_ranks: tuple[int, ...], root: int, payload: bytes) -> None:
        """The root's side of a broadcast: `payload` (the pickled values, or of None) for the others."""
        self.sent.append(ObjectMessage(self.next_key(group_ranks, root, None), root, (payload,)))

    def published(self, group_ranks: tuple[int, ...], root: int) -> bytes | None:
        """A non-root rank's side of the same broadcast: what the root published, None if no emulation did."""
        senders = self.inbox.get(self.next_key(group_ranks, root, None))
        return (senders[root] if root in senders else senders[min(senders)])[0] if senders else None

    def receive(self, group_ranks: tuple[int, ...], src: int, dst: int) -> tuple[bytes, ...]:
        """The pickles `src` sent: its own where it was emulated, else those of a sender at its position."""
        key = self.next_key(group_ranks, src, dst)
        senders = self.inbox.get(key)
        if not senders:
            self.waiting = ObjectNotSentYet(src, dst, key)
            raise self.waiting
        return senders[src] if src in senders else senders[min(senders)]


def add_messages(known: dict[tuple[MessageKey, int], ObjectMessage], messages) -> None:
    """Fold `messages` into `known` (keyed by key and sender, a later copy replacing an earlier)."""
    for m in messages:
        known[(m.key, m.src)] = m
