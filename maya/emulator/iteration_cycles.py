"""Where iterations end when a script steps several optimizers in each training step.

An iteration ends at each `optimizer.step()`. A GAN steps its discriminator's and its generator's
optimizers in every step, and Muon is used with AdamW for the parameters it does not take: with one
iteration per `step()` call, each training step would count as two iterations, and the step time
would be the mean of two parts of it. After the run, `merge_optimizer_cycles` finds the cycle in
which the optimizers step (the shortest order of their `step()` calls that repeats: (D, G), or (D,
D, G) for two discriminator steps per generator step) and keeps one iteration end per cycle, at its
last `step()`. Steps after the last whole cycle fall in no iteration, like other work after the last
iteration. Optimizers that step in no repeating order keep one iteration per `step()`, with a
warning. Iterations marked with `maya.mark_iteration()` are the script's own: when there are any,
they alone end iterations.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence

from maya.emulator.events import EventKind
from maya.emulator.state import ROW_FIELDS, EmulationState, IterationStats

log = logging.getLogger(__name__)

_SEQ, _ITERATION, _KIND = (ROW_FIELDS.index(name) for name in ("seq", "iteration", "kind"))
_END = EventKind.ITERATION_END.value


def step_cycle(owners: Sequence[object]) -> int | None:
    """The length of the shortest order of optimizer steps that `owners` (one entry per `step()`,
    naming its optimizer) repeats, or None when it repeats none.

    A cycle counts once it has begun again (owners longer than it), or when every optimizer stepped
    exactly once. One optimizer is a cycle of 1.
    """
    n, distinct = len(owners), len(set(owners))
    if distinct <= 1:
        return 1
    for length in range(distinct, n + 1):
        if any(owners[i] != owners[i - length] for i in range(length, n)):
            continue
        if length < n or distinct == n:
            return length
        return None
    return None


def kept_ends(ends: Sequence[tuple[int, str] | None]) -> list[bool] | None:
    """Which of a run's iteration ends (`EmulationState.iteration_ends`) stay; None: all of them."""
    if any(end is None for end in ends):
        keep = [end is None for end in ends]
        return None if all(keep) else keep
    length = step_cycle([end[0] for end in ends])
    if length is None:
        names = sorted({end[1] for end in ends})
        log.warning(
            "%d optimizers (%s) stepped in no repeating order over %d step() calls: each step() ends an "
            "iteration. Call maya.mark_iteration() where a training step ends to set the iterations.",
            len({end[0] for end in ends}), ", ".join(names), len(ends),
        )
        return None
    if length == 1:
        return None
    cycle = _names(ends[:length])
    log.warning(
        "%d optimizer steps per training step (%s): an iteration ends at the last of them, not at each.",
        length, ", ".join(cycle),
    )
    return [(i + 1) % length == 0 for i in range(len(ends))]


def _names(ends: Sequence[tuple[int, str]]) -> list[str]:
    """Each step's optimizer by class name, numbered by first step where several share a class
    (`Adam #1, Adam #1, Adam #2`)."""
    first: dict[int, str] = {}
    for oid, name in ends:
        first.setdefault(oid, name)
    count, seen, label = Counter(first.values()), Counter(), {}
    for oid, name in first.items():
        seen[name] += 1
        label[oid] = f"{name} #{seen[name]}" if count[name] > 1 else name
    return [label[oid] for oid, _ in ends]


def merge_optimizer_cycles(state: EmulationState) -> None:
    """Keep one iteration end per optimizer cycle (see the module docstring): drop the other
    `iteration_end` rows, number the rows and iterations again, and take the merged iterations' peaks."""
    keep = kept_ends(state.iteration_ends)
    if keep is None:
        return
    # Old iteration k (the rows after the k-th end) becomes the number of kept ends before it.
    new_index, kept = [0], 0
    for k in keep:
        kept += k
        new_index.append(kept)
    rows, end = [], 0
    for row in state.rows:
        if row[_KIND] == _END:
            end += 1
            if not keep[end - 1]:
                continue
        renumbered = list(row)
        renumbered[_SEQ], renumbered[_ITERATION] = len(rows), new_index[row[_ITERATION]]
        rows.append(tuple(renumbered))
    stats = [IterationStats(index=j) for j in range(kept + 1)]
    for old in state.iterations:
        s = stats[new_index[old.index]]
        s.peak_allocated_bytes = max(s.peak_allocated_bytes, old.peak_allocated_bytes)
        s.peak_reserved_bytes = max(s.peak_reserved_bytes, old.peak_reserved_bytes)
    state.rows[:] = rows
    state.iterations[:] = stats
    state.iteration_ends[:] = [end for end, k in zip(state.iteration_ends, keep) if k]
    state.iteration = kept
