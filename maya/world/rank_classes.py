"""Rank classes: which ranks of a world would record the same trace, so that one emulation serves all.

A training script's ranks differ only through their place in its process groups: a pipeline stage
runs other layers than its neighbour, while data-parallel replicas (and, usually, tensor-parallel
peers) run the same ops on same-shaped shards. Maya learns which groupings matter from the script
itself:

1. Rank 0 runs first. Every rank creates every process group (c10d requires it), so rank 0's
   emulation yields the whole group table. Groups created one after another that are disjoint and
   of one size form a *family* (one DeviceMesh dimension, or the world group); a rank's *position*
   in a family is its index within its group there. Groups of other sizes created in between do
   not split a family (Megatron-LM creates each pipeline group's embedding groups right after it),
   and a group with the same ranks in the same order as an earlier one (a Gloo twin of an NCCL
   group) is that group's *twin*: it joins the earlier group's family and adds no positions.
2. A family whose positions other families already determine (the world group beside a full mesh)
   adds nothing and is dropped. For each remaining family, one *probe* rank differs from rank 0
   only there, taking the last position (the most likely to be special: the last pipeline stage,
   an uneven shard). If its trace equals rank 0's after normalisation (`trace_fingerprint`), the
   family is *invariant*.
3. A non-invariant family of more than two positions gets a second probe, at position 1. If its
   trace equals the last position's, only position 0 differs (rank 0 alone evaluates or logs on
   the GPU: nanoGPT's `train.py` does), and the family is *zero-only*: it tells position 0 from the
   rest, not each position from the others.
4. A non-invariant family whose probe's trace is *alike* rank 0's (`alike`: the same collectives,
   copies and host rows, per iteration FLOPs, bytes and peak memory within `ALIKE_TOLERANCE`, and
   kernel counts within `ALIKE_KERNEL_TOLERANCE`) counts as invariant. Sharded optimizer state is such a family: each data-
   parallel rank of Megatron-LM's distributed optimizer, or of FSDP over a dimension its degree does
   not divide, updates a shard that cuts the parameters at other places, so its copies and updates
   have other shapes, and every position would otherwise be a class of its own. The representative's
   trace then stands for ranks whose own would differ by less than the tolerance
   (`exact_dedup=True` in `maya.world.emulate_world`, `--exact-dedup`, turns this off).
5. Ranks with equal positions in every other non-invariant family, and equally at position 0 or
   not in the zero-only ones, form a class, represented by its lowest rank.

The assumption is that position 0 and the last position behaving alike means all positions do (and
position 1 and the last, all positions but 0). `--verify-dedup` checks it by emulating another member
of every class.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

Group = tuple[str, tuple[int, ...]]
"""(process group name, global ranks in group-rank order)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Family:
    """Groups created one after another, disjoint and of one size: one way the script partitions its ranks."""

    index: int
    """Creation order among the script's families."""
    groups: tuple[Group, ...]
    """The family's groups in creation order."""
    twins: tuple[Group, ...] = ()
    """Later groups with the same ranks, in the same order, as one of `groups` (another backend's copy)."""

    @property
    def group_size(self) -> int:
        return len(self.groups[0][1])

    def position(self, rank: int) -> int | None:
        """`rank`'s index within its group in this family, or None when no group holds it."""
        for _, ranks in self.groups:
            if rank in ranks:
                return ranks.index(rank)
        return None

    def group_of(self, rank: int) -> tuple[int, ...] | None:
        for _, ranks in self.groups:
            if rank in ranks:
                return ranks
        return None


def families(groups: Sequence[Group], world_size: int) -> list[Family]:
    """Split a group table into families (see the module docstring); duplicate names count once.

    A group joins the newest family of its size when it is disjoint from that family's groups and
    the family does not cover the world yet; otherwise it starts a family. A group whose ranks an
    earlier group already lists in the same order is a twin of that group's family.
    """
    seen: set[str] = set()
    out: list[list[Group]] = []
    twins: list[list[Group]] = []
    members: list[set[int]] = []
    newest_of_size: dict[int, int] = {}
    family_of_ranks: dict[tuple[int, ...], int] = {}
    for name, ranks in groups:
        if name in seen:
            continue
        seen.add(name)
        ranks = tuple(ranks)
        if ranks in family_of_ranks:
            twins[family_of_ranks[ranks]].append((name, ranks))
            continue
        current = newest_of_size.get(len(ranks))
        fits = (
            current is not None and not members[current].intersection(ranks)
            and len(members[current]) + len(ranks) <= world_size
        )
        if not fits:
            current = len(out)
            out.append([])
            twins.append([])
            members.append(set())
            newest_of_size[len(ranks)] = current
        out[current].append((name, ranks))
        members[current].update(ranks)
        family_of_ranks[ranks] = current
    return [Family(index=i, groups=tuple(g), twins=tuple(t)) for i, (g, t) in enumerate(zip(out, twins))]


def informative(fams: Sequence[Family], world_size: int) -> list[Family]:
    """Families that can tell ranks apart: size > 1, and not determined by the other families.

    The widest families are dropped first: a family whose groups combine others (Megatron's model-
    parallel group, tensor x pipeline; the world group) goes, and the narrow ones it combines stay.
    """
    useful = [f for f in fams if f.group_size > 1]
    kept = list(useful)
    for fam in sorted(useful, key=lambda f: -f.group_size):
        others = [f for f in kept if f is not fam]
        if not others:
            continue
        position_at: dict[tuple, int | None] = {}
        if all(position_at.setdefault(tuple(f.position(r) for f in others), fam.position(r)) == fam.position(r)
               for r in range(world_size)):  # the other families' positions already give this one's
            kept.remove(fam)
    return kept


def probe_rank(fam: Family, others: Sequence[Family], world_size: int, position: int | None = None) -> int | None:
    """A rank at the last position (or at `position`) of rank 0's group in `fam` that matches rank 0 in
    the other families."""
    group = fam.group_of(0)
    if group is None:
        return None
    target = tuple(f.position(0) for f in others)
    best, best_score = None, -1
    for rank in range(world_size):
        at = fam.position(rank)
        if at is None or at == fam.position(0) or (position is not None and at != position):
            continue
        score = sum(f.position(rank) == t for f, t in zip(others, target)) * world_size + at
        if score > best_score:
            best, best_score = rank, score
    return best


def signature(rank: int, variant: Sequence[Family], zero_only: Sequence[Family] = ()) -> tuple:
    """The positions that decide which class `rank` is in (whether it is at position 0, in a
    zero-only family)."""
    return tuple((f.position(rank) == 0) if f in zero_only else f.position(rank) for f in variant)


def classes(world_size: int, variant: Sequence[Family], zero_only: Sequence[Family] = ()) -> dict[int, int]:
    """Every rank -> its class representative (the lowest rank with the same signature)."""
    first: dict[tuple, int] = {}
    out = {}
    for rank in range(world_size):
        out[rank] = first.setdefault(signature(rank, variant, zero_only), rank)
    return out


_FINGERPRINT_COLUMNS = (
    "iteration", "kind", "op", "phase", "module", "stream", "event_id", "input_shapes", "input_dtypes",
    "input_strides", "output_shapes", "output_dtypes", "allocated_bytes", "reserved_bytes", "message_bytes",
    "reduce_op", "async_op",
)
"""Trace columns two ranks of one class must agree on; group names and peers are compared by role."""

_IGNORED_KINDS = frozenset({"sync"})
"""Host reads (`loss.item()` for logging) are left out of the comparison: scripts log on rank 0 only,
and the class then keeps its representative's (rank 0's) reads."""


def normalized_rows(table: pa.Table, rank: int, fams: Sequence[Family]) -> list[tuple]:
    """The trace as comparable tuples: group names become family indices, peers relative positions."""
    family_of = {name: f for f in fams for name, _ in (*f.groups, *f.twins)}
    columns = {c: table.column(c).to_pylist() for c in (*_FINGERPRINT_COLUMNS, "group_name", "group_ranks", "peer")}
    rows = []
    kinds = columns["kind"]
    for i in range(table.num_rows):
        if kinds[i] in _IGNORED_KINDS:
            continue
        row = tuple(columns[c][i] for c in _FINGERPRINT_COLUMNS)
        group = columns["group_name"][i]
        if group is not None:
            # The root of a scatter/gather passes the tensor lists, the other members do not: a
            # collective is compared by its op, size and group, not by which side holds the lists.
            row = tuple(None if c.startswith("input_") else v for c, v in zip(_FINGERPRINT_COLUMNS, row))
            fam = family_of.get(group)
            ranks = columns["group_ranks"][i] or []
            peer = columns["peer"][i]
            relative = None
            if peer is not None and rank in ranks and peer in ranks:
                relative = ranks.index(peer) - ranks.index(rank)
            row += (fam.index if fam else None, len(ranks), relative)
        rows.append(row)
    return rows


ALIKE_TOLERANCE = 0.005
"""Largest difference, per iteration, of FLOPs, bytes and peak allocated memory between two traces
that `alike` calls alike, relative to the largest iteration's (0.5%)."""
ALIKE_KERNEL_TOLERANCE = 0.02
"""Largest relative difference of their kernel counts over the whole trace (2%): a shard boundary
that falls inside a parameter splits one copy or update into two small ones."""

_MEMORY_COLUMNS = frozenset(_FINGERPRINT_COLUMNS.index(c) for c in ("allocated_bytes", "reserved_bytes"))


TraceTotals = tuple[dict[int, list[float]], int, list]
"""What `alike` compares of a trace (`trace_totals`)."""


def trace_totals(table: pa.Table, rank: int, fams: Sequence[Family]) -> TraceTotals:
    """Per iteration: [FLOPs, bytes (of kernels and copies), peak allocated bytes]; the kernel count; and
    the rows that must agree exactly: collectives as `normalized_rows` compares them (less the
    allocator's totals), and copies, host rows and iteration ends by iteration and op. Host reads are
    left out, as `trace_fingerprint` leaves them."""
    columns = {c: table.column(c).to_pylist() for c in ("iteration", "kind", "op", "flops", "bytes", "allocated_bytes")}
    normalized = iter(normalized_rows(table, rank, fams))
    totals: dict[int, list[float]] = {}
    kernels = 0
    exact = []
    for i, kind in enumerate(columns["kind"]):
        iteration = columns["iteration"][i]
        row = next(normalized) if kind not in _IGNORED_KINDS else None
        total = totals.setdefault(iteration, [0.0, 0.0, 0])
        total[2] = max(total[2], columns["allocated_bytes"][i] or 0)
        if kind == "kernel":
            total[0] += columns["flops"][i] or 0
            total[1] += columns["bytes"][i] or 0
            kernels += 1
            continue
        if kind == "memcpy":
            total[1] += columns["bytes"][i] or 0
        if row is not None and len(row) > len(_FINGERPRINT_COLUMNS):  # a collective, but for the memory totals
            exact.append(tuple(v for k, v in enumerate(row) if k not in _MEMORY_COLUMNS))
        elif kind not in ("event_record", "stream_wait", *_IGNORED_KINDS):
            exact.append((iteration, kind, columns["op"][i]))
    return totals, kernels, exact


def _relative(u: float, v: float) -> float:
    return abs(u - v) / max(abs(u), abs(v)) if u != v else 0.0


def alike(a: pa.Table, rank_a: int, b: pa.Table, rank_b: int, fams: Sequence[Family],
          tolerance: float = ALIKE_TOLERANCE, kernel_tolerance: float = ALIKE_KERNEL_TOLERANCE) -> str | None:
    """How far apart two traces that differ only in the shapes of their computation are, or None when
    they are not alike (`alike_totals` of their `trace_totals`)."""
    return alike_totals(trace_totals(a, rank_a, fams), trace_totals(b, rank_b, fams), tolerance, kernel_tolerance)


def alike_totals(a: TraceTotals, b: TraceTotals, tolerance: float = ALIKE_TOLERANCE,
                 kernel_tolerance: float = ALIKE_KERNEL_TOLERANCE) -> str | None:
    """How far apart two traces that differ only in the shapes of their computation are (the largest
    difference of FLOPs, bytes and peak memory over the iterations, relative to the largest
    iteration's, and that of the kernel counts), or None when they are not alike: another collective,
    copy, host row or iteration, or a total further apart than `tolerance` (`kernel_tolerance` for the
    kernel count)."""
    (totals_a, kernels_a, exact_a), (totals_b, kernels_b, exact_b) = a, b
    if exact_a != exact_b or totals_a.keys() != totals_b.keys():
        return None
    # Each difference is relative to the largest iteration's figure, so that the few kernels and frees
    # after the last step (an iteration of its own) do not weigh as a whole step.
    scale = [max(max(abs(x[k]), abs(totals_b[i][k])) for i, x in totals_a.items()) or 1.0 for k in range(3)]
    worst = [max(abs(x[k] - totals_b[i][k]) for i, x in totals_a.items()) / scale[k] for k in range(3)]
    kernels = _relative(kernels_a, kernels_b)
    if max(worst) > tolerance or kernels > kernel_tolerance:
        return None
    return ", ".join(f"{n} {w:.2%}" for n, w in zip(("FLOPs", "bytes", "peak memory", "kernels"), (*worst, kernels)))


def trace_fingerprint(table: pa.Table, rank: int, fams: Sequence[Family]) -> str:
    """A hash of `normalized_rows`: equal for ranks that would record the same trace."""
    digest = hashlib.blake2b(digest_size=16)
    for row in normalized_rows(table, rank, fams):
        digest.update(repr(row).encode())
    return digest.hexdigest()


def first_difference(a: pa.Table, rank_a: int, b: pa.Table, rank_b: int, fams: Sequence[Family]) -> str:
    """Describe the first row where two ranks' normalised traces differ."""
    rows_a, rows_b = normalized_rows(a, rank_a, fams), normalized_rows(b, rank_b, fams)
    for i, (x, y) in enumerate(zip(rows_a, rows_b)):
        if x != y:
            names = (*_FINGERPRINT_COLUMNS, "family", "group_size", "relative_peer")
            diff = {n: (u, v) for n, u, v in zip(names, x, y) if u != v}
            return f"row {i} ({x[2]} {x[1]}): " + ", ".join(f"{n}: {u!r} vs {v!r}" for n, (u, v) in diff.items())
    return f"rank {rank_a} records {len(rows_a)} rows, rank {rank_b} records {len(rows_b)}"
