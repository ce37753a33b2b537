"""`emulate_world`: emulate every rank class of a torchrun world on Ray tasks, each class once.

The phases (see `maya.world.rank_classes` for why they are enough):
1. rank 0, which yields the script's process-group table;
2. one probe rank per informative group family, in parallel, to learn which families change a
   rank's trace (skipped when the caller already knows, from an emulation of the same script and
   layout, e.g. at another micro-batch count); then, for each family that changes it and has more
   than two positions, a second probe at position 1, to learn whether only position 0 differs (a
   family whose probe's trace is alike rank 0's, `rank_classes.alike`, needs none: it does not
   split classes unless `exact_dedup`);
3. the remaining class representatives, in parallel (with the classes of an earlier emulation of
   the layout, phases 1 and 2 are skipped: rank 0 is one of them, and its group table is checked);
4. with `verify_dedup`, one more member of every class of several ranks, compared row by row.

A rank that receives an object list (`recv_object_list`: a pipeline stage's shape metadata) before
its sender was emulated stops there; its sender is emulated, then it again (`_InProcessRunner.run`,
`maya.emulator.object_mailbox`). Those senders join the phase's results.

Every rank emulation is a Ray task of one CPU (so Ray spreads them over the cluster's CPUs) on a
reused worker process, which keeps torch and Maya warm between emulations (see
`maya.world.rank_emulation.remote_emulate_rank`). A local Ray starts when none is running.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from maya.emulator.object_mailbox import MessageKey, ObjectMessage, add_messages
from maya.world.rank_classes import (
    Family,
    TraceTotals,
    alike_totals,
    classes,
    families,
    first_difference,
    informative,
    probe_rank,
    trace_fingerprint,
    trace_totals,
)
from maya.world.rank_emulation import RankResult, remote_emulate_rank

if TYPE_CHECKING:
    from maya.emulator.runner import ScriptModule

log = logging.getLogger(__name__)


class RankFailedError(RuntimeError):
    """The script failed on an emulated rank; the message holds the rank and its traceback."""

    def __init__(self, result: RankResult) -> None:
        super().__init__(f"rank {result.rank} failed:\n{result.error}")
        self.result = result


class ActorDiedError(RuntimeError):
    """An emulation's worker process died, was restarted once, and died again."""


class DedupMismatchError(RuntimeError):
    """Two ranks of one class recorded different traces (`verify_dedup`)."""


class TooManyRankClassesError(RuntimeError):
    """Deduplication left more rank classes than the caller allows (`max_rank_classes`)."""


class RankCheckStop(RuntimeError):
    """The caller's `after_rank` check ended the emulation after one rank (a tuning trial that
    already knows the configuration does not fit); no trace is written."""

    def __init__(self, reason: str, result: RankResult) -> None:
        super().__init__(f"stopped after rank {result.rank}: {reason}")
        self.reason = reason
        self.result = result


def completed_iterations(table) -> int:
    """Iterations a rank's trace completed: its `iteration_end` rows."""
    import pyarrow.compute as pc

    return int(pc.sum(pc.equal(table.column("kind"), "iteration_end")).as_py() or 0)


def through_iteration(table, count: int):
    """The rows of a rank's trace up to and including its `count`-th `iteration_end` row."""
    import pyarrow.compute as pc

    ends = pc.indices_nonzero(pc.equal(table.column("kind"), "iteration_end")).to_pylist()
    return table.slice(0, ends[count - 1] + 1) if 0 < count <= len(ends) else table.slice(0, 0)


RankCheck = Callable[[RankResult], "str | None"]
"""Called with every emulated rank's result; a returned reason ends the emulation (`RankCheckStop`)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class WorldEmulation:
    """The emulated ranks of a world and the classes they stand for."""

    world_size: int
    """Ranks in the world."""
    results: dict[int, RankResult]
    """Every rank that was emulated: representatives, probes and verification ranks."""
    rank_to_representative: dict[int, int]
    """Every rank -> the representative whose trace stands for it."""
    families: list[Family] = field(default_factory=list)
    """The script's group families."""
    variant_families: list[int] = field(default_factory=list)
    """Indices of the families whose position changes a rank's trace."""
    zero_only_families: list[int] = field(default_factory=list)
    """Indices of the variant families where only position 0 differs (`rank_classes`, step 3)."""
    alike_families: list[int] = field(default_factory=list)
    """Indices of the families whose positions' traces differ only within `rank_classes.alike`'s
    tolerances, so that they do not split classes (`rank_classes`, step 4)."""

    @property
    def representatives(self) -> list[int]:
        return sorted(set(self.rank_to_representative.values()))


def ensure_ray() -> None:
    """Connect to the running Ray cluster (RAY_ADDRESS or one started here), or start a local one."""
    import ray

    if not ray.is_initialized():
        ray.init(configure_logging=False, include_dashboard=False)


class _InProcessRunner:
    """Runs rank emulations one after another in this process (a Ray Tune trial's warm worker)."""

    def __init__(self, script: str, args: list[str], gpu: str, world_size: int, local_world_size: int,
                 progress: Callable[[str], None], after_rank: RankCheck | None = None,
                 first_ranks: Sequence[int] = (), late_failures: bool = False) -> None:
        self.call = (script, list(args), gpu)
        self.world_size = world_size
        self.local_world_size = local_world_size
        self.progress = progress
        self.after_rank = after_rank
        self.first_ranks = {rank: i for i, rank in enumerate(first_ranks)}
        self.late_failures = late_failures
        self.objects: dict[tuple[MessageKey, int], ObjectMessage] = {}
        """Every object list the emulations sent so far (`maya.emulator.object_mailbox`)."""
        self.parked: dict[int, RankResult] = {}
        """Ranks stopped by a receive of an object list not sent yet: their partial results."""
        self.completed: set[int] = set()
        """Ranks emulated to their end."""

    where = " in this process"

    def ordered(self, ranks: Iterable[int]) -> list[int]:
        """`ranks` without repeats: those of `first_ranks` first, in its order, then the rest descending.

        Descending because the highest ranks are the likeliest to run out of memory when no earlier
        emulation says which are (a pipeline's first stage is rank 0's, emulated before the others):
        with DeviceMesh's usual order of dimensions, pipeline outermost, they are the last pipeline
        stage, which holds the loss and, under torch.distributed.pipelining, every micro-batch's
        output until the step ends. A check that stops at the first rank over memory
        (`after_rank`) then stops after one rank instead of after every stage before the last.
        """
        return sorted(set(ranks), key=lambda r: (self.first_ranks.get(r, len(self.first_ranks)), -r))

    def finished(self, result: RankResult) -> RankResult:
        """Check one emulated rank: its script's exit, then the caller's `after_rank`."""
        if result.exit_code != 0:
            whole = completed_iterations(result.table)
            if not (self.late_failures and not result.oom and whole >= 1):
                raise RankFailedError(result)
            last = (result.error or "").strip().splitlines()[-1:] or ["no traceback"]
            self.progress(f"  rank {result.rank} failed after {whole} whole iteration(s), which are kept: {last[0]}")
        self.progress(f"  rank {result.rank} emulated in {result.emulation_s:.1f} s ({result.table.num_rows} trace rows)")
        reason = self.after_rank(result) if self.after_rank is not None else None
        if reason is not None:
            raise RankCheckStop(reason, result)
        return result

    def run(self, ranks: Iterable[int], what: str) -> dict[int, RankResult]:
        """Emulate `ranks`, and any rank whose object lists they receive before their senders' emulations
        sent them (`maya.emulator.object_mailbox`): a rank stopped by such a receive waits until the
        sender is emulated, then is emulated again. Returns every rank emulated to its end."""
        ranks = self.ordered(ranks)
        if not ranks:
            return {}
        self.progress(f"emulating {what}{self.where}: rank(s) {_short(ranks)}")
        results: dict[int, RankResult] = {}
        queue = ranks
        while queue:
            # closing: a rank that fails ends the world, and the runs still going are stopped at once
            # (the emulate generator's clean-up), not when the traceback lets the generator go
            with contextlib.closing(self.emulate(queue)) as runs:
                for rank, result in runs:
                    self._arrived(rank, result, results)
            queue = self._next_round()
        return results

    def _arrived(self, rank: int, result: RankResult, results: dict[int, RankResult]) -> None:
        """File one finished emulation: its object lists, then the rank as done or as waiting."""
        add_messages(self.objects, result.sent_objects)
        if result.waiting_for is None:
            self.parked.pop(rank, None)
            self.completed.add(rank)
            results[rank] = self.finished(result)
        else:
            self.parked[rank] = result
            self.progress(f"  rank {rank} waits for an object list from rank {result.waiting_for}, "
                          "which it receives before that rank was emulated; it runs again after it")

    def _next_round(self) -> list[int]:
        """The parked ranks whose object list has arrived, after the senders still to emulate."""
        keys = {key for key, _ in self.objects}
        ready = [r for r, res in self.parked.items() if res.waiting_key in keys]
        senders = []
        for rank, res in self.parked.items():
            src = res.waiting_for
            if res.waiting_key in keys or src in self.parked or src in senders:
                continue
            if src in self.completed:  # emulated to its end without sending it
                raise RankFailedError(replace(res, exit_code=res.exit_code or 1, error=res.error or "waits for rank "
                                              f"{src}'s object list, which that rank's emulation never sent"))
            senders.append(src)
        if self.parked and not ready and not senders:  # each waits for another that waits
            first = min(self.parked)
            raise RankFailedError(replace(self.parked[first], exit_code=1, error=(
                "the ranks wait for each other's object lists: "
                + ", ".join(f"rank {r} for rank {res.waiting_for}" for r, res in sorted(self.parked.items()))
                + "\n" + (self.parked[first].error or ""))))
        return senders + ready

    def emulate(self, ranks: list[int]) -> Iterator[tuple[int, RankResult]]:
        """Emulate `ranks` one after another, each with the object lists sent before it starts."""
        from maya.world.rank_emulation import emulate_rank

        script, args, gpu = self.call
        for rank in ranks:
            yield rank, emulate_rank(script, args, gpu, rank, self.world_size, self.local_world_size,
                                     tuple(self.objects.values()))


class _RankRunner(_InProcessRunner):
    """Runs rank emulations as Ray tasks, as many at once as Ray has CPUs for."""

    where = ""

    def __init__(self, *args, **kwargs) -> None:
        from maya.emulator.allocator_config import environment_settings

        super().__init__(*args, **kwargs)
        self.task = remote_emulate_rank()
        # The allocator settings of the `maya emulate` command's environment reach every rank, whether Ray's
        # workers were started from this environment or not (a cluster started before, elsewhere).
        self.env_vars = environment_settings()
        self.fresh_only = False
        """Set once a rank failed in a reused worker and ran in a fresh one (`emulate`)."""
        if self.env_vars:
            self.task = self.task.options(runtime_env={"env_vars": self.env_vars})

    def _fresh(self, rank: int):
        """The task on a worker process of its own: Ray starts one for a runtime environment no worker
        has (an idle worker of the pool, whatever it ran before, would take a task of `max_calls` 1)."""
        env = {**(self.env_vars or {}), "MAYA_FRESH_WORKER": f"{os.getpid()}-{id(self)}-{rank}-{time.monotonic_ns()}"}
        return remote_emulate_rank(fresh=True).options(runtime_env={"env_vars": env})

    def emulate(self, ranks: list[int]) -> Iterator[tuple[int, RankResult]]:
        """Emulate `ranks` as Ray tasks at once (each with the object lists sent before any starts), yielding
        each as it ends; a failed rank ends the world, so the others are then cancelled."""
        import ray
        from ray.exceptions import WorkerCrashedError

        script, args, gpu = self.call
        objects = ray.put(tuple(self.objects.values())) if self.objects else ()
        pending = {(self._fresh(rank) if self.fresh_only else self.task).remote(
            script, args, gpu, rank, self.world_size, self.local_world_size, objects): rank for rank in ranks}
        try:
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                rank = pending.pop(done[0])
                try:
                    result = ray.get(done[0])
                except WorkerCrashedError as e:
                    raise ActorDiedError(
                        f"rank {rank}: the emulation process died, was restarted once and died again ({e})"
                    ) from None
                if result.exit_code and result.waiting_for is None and result.process_emulations > 1:
                    # A library's module-level state from an earlier emulation in that worker (Megatron's
                    # "args is already initialized") fails a script that a fresh process runs: its own
                    # process decides, as torchrun's would.
                    self.progress(f"  rank {rank} failed in a reused worker process; emulating it again in a fresh one")
                    result = ray.get(self._fresh(rank).remote(script, args, gpu, rank, self.world_size,
                                                              self.local_world_size, objects))
                    if not result.exit_code:  # the script needs a process of its own: every later rank gets one
                        self.fresh_only = True
                        self.progress("  the script fails in reused worker processes: the other ranks are emulated "
                                      "in fresh ones")
                yield rank, result
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)


def emulate_world(
    script: str | os.PathLike | ScriptModule,
    args: list[str] | tuple[str, ...],
    *,
    gpu: str,
    world_size: int,
    local_world_size: int,
    dedup: bool = True,
    verify_dedup: bool = False,
    progress: Callable[[str], None] | None = None,
    variant_families: Sequence[int] | None = None,
    in_process: bool = False,
    max_rank_classes: int | None = None,
    after_rank: RankCheck | None = None,
    first_ranks: Sequence[int] = (),
    rank_classes: Mapping[int, int] | None = None,
    late_failures: bool = False,
    zero_only_families: Sequence[int] = (),
    exact_dedup: bool = False,
) -> WorldEmulation:
    """Emulate `script` as every rank class of a `world_size`-rank torchrun job.

    Args:
        script: the training script, or a module (`ScriptModule`); either must be readable by the Ray
            workers, e.g. via a working dir.
        args: the script's arguments.
        gpu: catalog key of the emulated GPU.
        world_size: ranks in the job (nnodes * nproc_per_node).
        local_world_size: ranks per node (nproc_per_node).
        dedup: emulate one rank per class; False emulates every rank.
        verify_dedup: also emulate another member of every multi-rank class and compare traces.
        progress: called with one line per step, for a terminal or a log.
        variant_families: indices of the group families whose position changes a rank's trace, as
            an earlier emulation of the same script and layout found them (its
            `WorldEmulation.variant_families`); skips the probe phase. None: probe.
        zero_only_families: with `variant_families`, those of them where only position 0 differs, as
            the same emulation found them (its `WorldEmulation.zero_only_families`).
        in_process: emulate the ranks one after another in this process instead of as Ray tasks
            (no Ray needed): what a tuning trial does, whose warm process is its CPU.
        max_rank_classes: fail before emulating the class representatives when there are more
            classes than this (a tuning trial's bound on its time); None: no limit.
        after_rank: called with each emulated rank's result (rank 0, probes, representatives);
            a returned reason ends the emulation with `RankCheckStop` (a tuning trial's bound on
            memory, `maya.tune.rank_memory_check`).
        first_ranks: ranks to emulate before the others of their phase, in this order (those most
            likely to make `after_rank` stop); the rest go in descending order (`_InProcessRunner.ordered`).
        rank_classes: every rank -> its class representative, as an earlier emulation of the same
            script and layout found them (its `WorldEmulation.rank_to_representative`), given with
            that emulation's `variant_families`: only the representatives are emulated, rank 0 among
            them in `first_ranks` order rather than first, and rank 0's group table must give the
            same classes (else RuntimeError). None: rank 0 first, then the classes it implies.
        late_failures: a rank whose script fails after whole iterations (not out of memory) is
            kept, with its `exit_code` and `error`, instead of ending the emulation: the caller
            times the iterations every rank completed (`completed_iterations`, `through_iteration`).
        exact_dedup: put ranks in one class only when their traces are the same; by default a family
            whose probe's trace is alike rank 0's (the same collectives, and FLOPs, bytes, kernels and
            peak memory within `rank_classes.alike`'s tolerances: sharded optimizer state) does not
            split classes.

    Raises:
        RankFailedError: the script failed on a rank (its traceback and rank are in the message);
            with `late_failures`, only within its first iteration or out of memory.
        ActorDiedError: an emulation process died twice.
        DedupMismatchError: `verify_dedup` found two members of a class with different traces.
        TooManyRankClassesError: more rank classes than `max_rank_classes`.
        RankCheckStop: `after_rank` returned a reason.
    """
    if rank_classes is not None and (variant_families is None or verify_dedup or not dedup):
        raise ValueError("rank_classes needs variant_families, dedup, and no verify_dedup")
    progress = progress or log.info
    if not in_process:
        ensure_ray()
    runner = _InProcessRunner if in_process else _RankRunner
    from maya.emulator.runner import ScriptModule

    script = script if isinstance(script, ScriptModule) else str(Path(script).resolve())
    pool = runner(script, list(args), gpu, world_size, local_world_size, progress,
                  after_rank, first_ranks, late_failures)
    if not dedup:  # rank 0 first, as with classes: the others read its broadcasts (maya.emulator.object_mailbox)
        results = pool.run([0], "rank 0")
        results.update(pool.run(range(1, world_size), "every other rank"))
        return WorldEmulation(world_size=world_size, results=results, rank_to_representative={r: r for r in range(world_size)})
    if rank_classes is not None:
        return _known_classes(pool, world_size, dict(rank_classes), variant_families, zero_only_families, max_rank_classes)
    results = pool.run([0], "rank 0 (its group table decides the rank classes)")
    fams = families(results[0].groups, world_size)
    useful = informative(fams, world_size)
    if variant_families is None:
        probes = {f.index: probe_rank(f, [o for o in useful if o is not f], world_size) for f in useful}
        results.update(pool.run([p for p in probes.values() if p is not None and p not in results],
                                "one probe rank per group family"))
    known: dict[int, str] = {}

    def fingerprint(rank: int) -> str:
        """Each emulated rank's trace is normalised and hashed once (29k rows at Llama-70B scale)."""
        if rank not in known:
            known[rank] = trace_fingerprint(results[rank].table, rank, fams)
        return known[rank]

    totals: dict[int, TraceTotals] = {}

    def how_alike(a: int, b: int) -> str | None:
        """`rank_classes.alike` of two emulated ranks, each rank's totals taken once."""
        for rank in (a, b):
            if rank not in totals:
                totals[rank] = trace_totals(results[rank].table, rank, fams)
        return alike_totals(totals[a], totals[b])

    zero_only: list[Family] = []
    alike_found: dict[int, str] = {}
    if variant_families is None:
        variant = [f for f in useful if probes[f.index] is None or fingerprint(probes[f.index]) != fingerprint(0)]
        for f in [f for f in variant if probes[f.index] is not None and not exact_dedup]:
            how = how_alike(0, probes[f.index])
            if how is not None:  # only the shapes of its computation differ (sharded optimizer state)
                alike_found[f.index] = how
                variant.remove(f)
        middles = {f.index: probe_rank(f, [o for o in useful if o is not f], world_size, position=1)
                   for f in variant if f.group_size > 2 and probes[f.index] is not None}
        middles = {i: r for i, r in middles.items() if r is not None}  # position 1, never the last probe's
        if middles:
            results.update(pool.run([r for r in middles.values() if r not in results],
                                    "a second probe (position 1) per family that varies"))
            zero_only = [f for f in variant if f.index in middles and fingerprint(middles[f.index]) == fingerprint(probes[f.index])]
    else:
        variant = [f for f in useful if f.index in set(variant_families)]
        zero_only = [f for f in variant if f.index in set(zero_only_families)]
    rep = classes(world_size, variant, zero_only)
    representatives = set(rep.values())

    def verdict(f: Family) -> str:
        if f.index in alike_found:
            return f"alike, its ranks one class (they differ by {alike_found[f.index]})"
        return "varies at position 0 only" if f in zero_only else "varies" if f in variant else "same trace"

    progress(
        f"{len(representatives)} rank class(es) over {world_size} ranks; group families "
        + ", ".join(f"#{f.index} (size {f.group_size}): {verdict(f)}" for f in useful)
    )
    _check_class_count(len(representatives), world_size, max_rank_classes, variant)
    results.update(pool.run([r for r in representatives if r not in results], "class representatives"))
    within = how_alike if alike_found else None
    _check_members(results, rep, fams, fingerprint, within)
    if verify_dedup:
        extra = _verification_ranks(rep, results)
        results.update(pool.run(extra, "one more member per class (--verify-dedup)"))
        _check_members(results, rep, fams, fingerprint, within)
    return WorldEmulation(
        world_size=world_size, results=results, rank_to_representative=rep, families=fams,
        variant_families=[f.index for f in variant], zero_only_families=[f.index for f in zero_only],
        alike_families=sorted(alike_found),
    )


def _known_classes(pool: _InProcessRunner, world_size: int, rep: dict[int, int], variant_families: Sequence[int],
                   zero_only_families: Sequence[int], max_rank_classes: int | None) -> WorldEmulation:
    """`emulate_world` when an earlier emulation of the layout found the rank classes `rep`."""
    representatives = set(rep.values())
    _check_class_count(len(representatives), world_size, max_rank_classes)
    results = pool.run(representatives, "class representatives (rank classes of an earlier emulation of this layout)")
    fams = families(results[0].groups, world_size)
    variant = [f for f in informative(fams, world_size) if f.index in set(variant_families)]
    zero_only = [f for f in variant if f.index in set(zero_only_families)]
    if classes(world_size, variant, zero_only) != rep:
        raise RuntimeError(
            "rank 0's group table gives other rank classes than the earlier emulation of this layout that was "
            "passed as rank_classes: the script's process groups differ between the two emulations"
        )
    return WorldEmulation(world_size=world_size, results=results, rank_to_representative=rep, families=fams,
                          variant_families=[f.index for f in variant], zero_only_families=[f.index for f in zero_only])


def _check_class_count(count: int, world_size: int, max_rank_classes: int | None, variant: Sequence[Family] = ()) -> None:
    """Raise `TooManyRankClassesError` when `count` classes are more than `max_rank_classes`."""
    if max_rank_classes is None or count <= max_rank_classes:
        return
    varying = ", ".join(f"#{f.index} (size {f.group_size})" for f in variant)
    raise TooManyRankClassesError(
        f"{count} rank classes over {world_size} ranks, more than max_rank_classes={max_rank_classes}"
        + (f": the trace changes with the position in group families {varying} (uneven FSDP shards, say, when a "
           "dimension does not divide by the data-parallel degree)" if variant else "")
    )


def _verification_ranks(rep: dict[int, int], results: dict[int, RankResult]) -> list[int]:
    """For every class of several ranks, its highest rank unless already emulated.

    The highest rank differs from the representative in every family at once, where a probe in the
    class (which differs in one family only, and was already compared) cannot show that two
    positions together change the trace.
    """
    members: dict[int, list[int]] = {}
    for rank, r in rep.items():
        members.setdefault(r, []).append(rank)
    return [max(ranks) for ranks in members.values() if len(ranks) > 1 and max(ranks) not in results]


def _check_members(
    results: dict[int, RankResult], rep: dict[int, int], fams: list[Family], fingerprint: Callable[[int], str],
    how_alike: Callable[[int, int], str | None] | None = None,
) -> None:
    """Every emulated non-representative must match its representative's trace, or, given `how_alike`
    (where families were found alike), be alike it (`maya.world.rank_classes.alike`)."""
    for rank, result in sorted(results.items()):
        r = rep[rank]
        if r == rank or r not in results:
            continue
        if fingerprint(rank) != fingerprint(r) and (how_alike is None or how_alike(r, rank) is None):
            raise DedupMismatchError(
                f"ranks {r} and {rank} were put in one class but record different traces: "
                + first_difference(results[r].table, r, result.table, rank, fams)
                + "; rerun without deduplication (--no-dedup)"
            )


def _short(ranks: list[int]) -> str:
    return ", ".join(map(str, ranks)) if len(ranks) <= 12 else f"{', '.join(map(str, ranks[:10]))}, ... ({len(ranks)} ranks)"
