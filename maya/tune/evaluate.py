"""`evaluate`: one configuration of a study, end to end, in the calling process (a Ray Tune trial).

Resolve the configuration (or prune it), then take its figures from the trace cache, re-simulate a
cached trace on this cluster, or emulate the script with `maya.emulate`; turn the predicted step
time into the time and cost of the fixed work. Nothing raises: a crash becomes a `failed` outcome
carrying its traceback, so the study goes on.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import statistics
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from maya.tune import memory_dominance
from maya.tune.accum_extrapolation import extrapolate_figures, extrapolation_counts, memory_segments
from maya.tune.candidate import Candidate, PrunedConfig, resolve_candidate, script_argv
from maya.tune.cost import INFEASIBLE_OBJECTIVE, objective_value, time_to_train_s, training_cost_usd
from maya.tune.depth_extrapolation import depth_counts
from maya.tune.outcome import CacheUse, TrialOutcome, TrialStatus
from maya.tune.rank_memory_check import RankMemoryCheck, stage_order
from maya.tune.resimulate import resimulate
from maya.tune.study import Study
from maya.tune.trace_cache import TraceCache, digest, emulation_inputs, emulation_key, file_sha256, simulation_key
from maya.world import RankCheckStop, TooManyRankClassesError
from maya.world.world_emulation import RankCheck

log = logging.getLogger(__name__)

TOP_OPS_KEPT = 5
_GIB = 1 << 30


def evaluate(
    study: Study, config: Mapping[str, Any], cache: TraceCache, specs: dict | None = None,
    emulate: Callable[..., Any] | None = None,
) -> TrialOutcome:
    """Predict one configuration of `study`.

    Args:
        study: the study.
        config: one sampled configuration of its space.
        cache: where emulation results are looked up and stored.
        specs: memo for `resolve_candidate`.
        emulate: runs one emulation, with `emulate_with_log`'s signature (the default: in this
            process, several ranks one after another).

    Returns:
        The outcome: ok with time and cost, infeasible (out of memory), pruned, or failed.
    """
    started = time.perf_counter()
    try:
        candidate = resolve_candidate(study, config, specs)
    except PrunedConfig as e:
        return TrialOutcome(status=TrialStatus.PRUNED, reason=e.reason, objective=INFEASIBLE_OBJECTIVE,
                            evaluate_s=time.perf_counter() - started)
    except Exception as e:  # a study's own check raised
        return _failed(e, started)
    launch = {
        "world_size": candidate.world_size,
        "gpus_per_node": candidate.cluster.gpus_per_node,
        "dp": candidate.dp,
        "accum": candidate.accum,
        "gpu": candidate.cluster.gpu,
        "price_per_gpu_hour_usd": candidate.cluster.price_per_gpu_hour_usd,
        "argv": " ".join(candidate.argv),
    }
    over_memory = memory_dominance.memory_file(study, cache.root) if study.memory_dominance else None
    dominated = memory_dominance.dominating(study, candidate, over_memory) if over_memory else None
    if dominated is not None:
        return TrialOutcome(status=TrialStatus.INFEASIBLE, reason=dominated, objective=INFEASIBLE_OBJECTIVE,
                            cache=CacheUse.DOMINATED, evaluate_s=time.perf_counter() - started, **launch)
    try:
        schedule = candidate.config.get("pp_schedule")
        accums = extrapolation_counts(candidate.accum, candidate.pp, schedule) if study.extrapolate_accum else None
        depths = depth_counts(study, candidate.config)
        layout = _LayoutClasses.of(study, config, candidate, cache)
        if accums is None and depths is None:
            recorded, figures, use = _figures(study, candidate, cache, emulate or emulate_with_log, layout)
            layout.learn(figures, use)
        else:
            recorded, figures, use = _extrapolated(study, config, candidate, depths, accums, cache, emulate or emulate_with_log,
                                                   layout)
    except Exception as e:
        return _failed(e, started, **launch)
    elapsed = time.perf_counter() - started
    if recorded is not None:  # out of memory or the script failed: no figures on any cluster
        outcome = TrialOutcome(status=TrialStatus(recorded["status"]), reason=recorded["reason"], error=recorded["error"],
                               objective=INFEASIBLE_OBJECTIVE, peak_allocated_bytes=recorded.get("peak_allocated_bytes"),
                               peak_reserved_bytes=recorded.get("peak_reserved_bytes"), cache=use, evaluate_s=elapsed, **launch)
    else:
        outcome = _with_cost(study, candidate, figures, use, elapsed, launch)
    if outcome.status is TrialStatus.INFEASIBLE and over_memory:
        uncached = recorded is not None and recorded.get("stopped_at_rank") is not None
        memory_dominance.record(study, candidate, outcome.reason, over_memory, uncached=uncached)
    return outcome


@dataclass(kw_only=True, slots=True)
class _LayoutClasses:
    """The rank classes of a configuration's layout: which group families change a rank's trace
    (`maya.world.emulate_world`'s `variant_families`) and every rank's class representative. Read from
    the cache (only when an emulation needs them) if an emulation of the layout found them, else
    learnt from this configuration's first emulation and recorded for the next ones, which then
    emulate neither rank 0 first nor probe ranks, only the representatives."""

    cache: TraceCache
    key: str
    inputs: dict
    record: dict | None = None
    """The cache's record (`TraceCache.read_rank_classes`), {} when there is none; None until read."""

    @classmethod
    def of(cls, study: Study, config: Mapping[str, Any], candidate: Candidate, cache: TraceCache) -> _LayoutClasses:
        inputs = layout_inputs(study, config, candidate)
        return cls(cache=cache, key=digest(inputs), inputs=inputs)

    def _known(self) -> dict:
        if self.record is None:
            self.record = self.cache.read_rank_classes(self.key) or {}
        return self.record

    @property
    def families(self) -> list[int] | None:
        """None also for a record without `zero_only_families` (written before they were recorded),
        whose classes this layout learns again."""
        known = self._known()
        return known.get("variant_families") if "zero_only_families" in known else None

    @property
    def zero_only(self) -> list[int]:
        return self._known().get("zero_only_families") or []

    @property
    def classes(self) -> dict[int, int] | None:
        classes = self._known().get("rank_to_representative") if self.families is not None else None
        return None if classes is None else {int(rank): rep for rank, rep in classes.items()}

    def learn(self, figures: Mapping[str, Any] | None, use: CacheUse) -> None:
        """Record the rank classes of the emulation (`use` a miss) whose `figures` are given, if none were known."""
        from maya.trace.store import read_meta

        if use is not CacheUse.MISS or not figures or figures.get("variant_families") is None or self.families is not None:
            return
        meta = read_meta(figures["trace_dir"])
        classes = meta.get("rank_to_representative")
        if classes is not None:
            self.record = {"variant_families": figures["variant_families"], "rank_to_representative": classes,
                           "zero_only_families": meta.get("zero_only_families") or [], "inputs": self.inputs}
            self.cache.write_rank_classes(self.key, self.record)


def layout_inputs(study: Study, config: Mapping[str, Any], candidate: Candidate) -> dict[str, Any]:
    """What decides a layout's rank classes: the emulation inputs of `config` without its micro-batch
    size, micro-batch count and depth, and the world's shape.

    The classes come from the script's process groups and from which group families change a rank's
    trace (a probe rank, differing from rank 0 in one family's position, compared with rank 0); the
    micro-batch size and count and the depth change every rank's shapes and op counts alike, so the
    classes hold for every value of them (an extrapolated configuration already reuses its first
    point's classes at its other points). Rank 0's group table is checked against them whenever rank
    0 is emulated (`maya.world.emulate_world`).
    """
    argv = script_argv(study, {k: v for k, v in config.items() if k != "micro_batch"}, accum=1)
    return {
        **emulation_inputs(script_sha256=file_sha256(study.script), argv=argv, gpu=candidate.cluster.gpu,
                           tp=candidate.tp, pp=candidate.pp, dp=candidate.dp, dp_mode=candidate.dp_mode),
        "dp": candidate.dp, "world_size": candidate.world_size, "gpus_per_node": candidate.cluster.gpus_per_node,
    }


def _figures(study: Study, candidate: Candidate, cache: TraceCache, emulate: Callable[..., Any],
             layout: _LayoutClasses, after_rank: RankMemoryCheck | None = None, first_ranks: Sequence[int] = ()):
    """(cluster-independent end or None, figures or None, where they came from) of `candidate` as it is;
    `layout`: its rank classes, if known; `after_rank` and `first_ranks` as `maya.emulate` takes them."""
    inputs = _inputs(study, candidate)
    host = study.host_profiles.get(candidate.cluster.gpu)
    key, sim_key = emulation_key(inputs), simulation_key(candidate.cluster, host)
    with cache.lock(key):
        return _lookup_or_emulate(study, candidate, cache, key, sim_key, inputs, emulate, layout, after_rank, first_ranks,
                                  host)


def _inputs(study: Study, candidate: Candidate) -> dict:
    """`candidate`'s emulation inputs (its trace-cache key's payload)."""
    return emulation_inputs(
        script_sha256=file_sha256(study.script), argv=candidate.argv, gpu=candidate.cluster.gpu,
        tp=candidate.tp, pp=candidate.pp, dp=candidate.dp, dp_mode=candidate.dp_mode,
    )


def _at_point(study: Study, config: Mapping[str, Any], candidate: Candidate, depth: int | None,
              accum: int | None) -> Candidate:
    """`candidate` at one extrapolation point (None: the configuration's own depth or accum)."""
    return replace(candidate, accum=accum or candidate.accum, argv=script_argv(study, config, accum or candidate.accum, depth))


def _scout(study: Study, config: Mapping[str, Any], candidate: Candidate, depths: tuple[int, int] | None,
           accums: tuple[int, int] | None, cache: TraceCache) -> dict | None:
    """The infeasible record of a pipelined configuration that its highest rank alone rules out, or None.

    The highest rank has the last position in every mesh dimension, so it is a last pipeline stage,
    which keeps the loss and, under torch.distributed.pipelining, every micro-batch's output until
    the step ends: in the Llama-70B study the stage that does not fit, most often. It is emulated
    alone (in this process) at every extrapolation point, each checked against its own earlier
    points as the rank checks do (`maya.tune.rank_memory_check`): a bound over the GPU's memory, or
    the script running out of memory, ends the configuration after one rank per point instead of
    every stage of the first point. Only when no point is in the cache (a cached point is cheaper
    than scouting). A configuration that fits pays one rank emulation per point; a scouted rank
    that fails otherwise is left to the world's emulation to report.
    """
    from maya.world.rank_emulation import emulate_rank

    points = [((depth, accum), _at_point(study, config, candidate, depth, accum))
              for accum in accums or (None,) for depth in depths or (None,)]  # `_extrapolated`'s order
    inputs = [_inputs(study, small) for _, small in points]
    keys = [emulation_key(i) for i in inputs]
    if any(cache.read_outcome(key) is not None or cache.trace_dir(key) is not None for key in keys):
        return None
    rank, prior = candidate.world_size - 1, {}
    for (corner, small), key, point_inputs in zip(points, keys, inputs):
        check = RankMemoryCheck(
            corner=corner, depths=depths, accums=accums, full_depth=study.full_depth, accum=candidate.accum,
            prior=prior, over_capacity=lambda reserved, at: _over_capacity(study, candidate, reserved, at=at),
        )
        with open(os.devnull, "w") as out, contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            result = emulate_rank(str(study.script), list(small.argv), small.cluster.gpu, rank, small.world_size,
                                  small.cluster.gpus_per_node)
        if result.exit_code != 0:
            if not result.oom:
                return None
            recorded = {**_script_end(result, small), "error": f"[rank {rank}] {result.error}"}
            cache.write_outcome(key, recorded, point_inputs)  # the world at this point fails so too
            return {**recorded, "reason": f"{recorded['reason']} ({_point_text(study, candidate, corner)})"}
        reason = check(result)
        if reason is not None:
            return _over_memory(reason, check.peaks) | {"stopped_at_rank": rank}
        prior[corner] = {"memory_segments": {str(rank): check.segments[str(rank)]}}
    return None


def _point_names(study: Study, candidate: Candidate, corner: tuple[int | None, int | None]) -> tuple[str, str]:
    """("depth=.., accum=..", "depth=.., accum=..") of an extrapolation point and of the full
    configuration it extrapolates to, on the axes that are extrapolated."""
    at = ", ".join(f"{k}={v}" for k, v in zip(("depth", "accum"), corner) if v is not None)
    goal = ", ".join(f"{k}={v}" for k, v, c in zip(("depth", "accum"), (study.full_depth, candidate.accum), corner)
                     if c is not None)
    return at, goal


def _point_text(study: Study, candidate: Candidate, corner: tuple[int | None, int | None]) -> str:
    """"at depth=.., accum=.., emulated to extrapolate to depth=.., accum=..": where a point's verdict comes from."""
    at, goal = _point_names(study, candidate, corner)
    return f"at {at}, emulated to extrapolate to {goal}"


def _extrapolated(study: Study, config: Mapping[str, Any], candidate: Candidate, depths: tuple[int, int] | None,
                  accums: tuple[int, int] | None, cache: TraceCache, emulate: Callable[..., Any], layout: _LayoutClasses):
    """`_figures` of `candidate` extrapolated from emulations at two smaller depths and/or micro-batch
    counts (each point its own cache entry; with both, the four corners).

    Memory grows with depth and micro-batches, so a small point that runs out of memory (or fails)
    ends the configuration with that point's outcome, and so does a point whose own peak is over the
    GPU's memory, or whose peak at the fewer micro-batches extrapolated to the full depth is (both
    depths emulated first), or a lower bound from the first three corners
    (`_over_memory_by_three_corners`). Within a point, every rank is checked as it is emulated
    against the points before it (`maya.tune.rank_memory_check`), and the point's emulation stops at
    the first rank that cannot fit. Points emulate only the class representatives once `layout` knows
    the rank classes (from an earlier configuration of the layout, or from the first point): neither
    the depth nor the micro-batch size or count changes them.
    """
    if candidate.pp > 1:
        scouted = _scout(study, config, candidate, depths, accums, cache)
        if scouted is not None:
            return scouted, None, CacheUse.MISS
    figures: dict[tuple[int | None, int | None], dict] = {}
    uses, fewest_at_full = [], None
    for i, accum in enumerate(accums or (None,)):
        for depth in depths or (None,):
            small = _at_point(study, config, candidate, depth, accum)
            check = RankMemoryCheck(
                corner=(depth, accum), depths=depths, accums=accums, full_depth=study.full_depth, accum=candidate.accum,
                prior=figures, over_capacity=lambda reserved, at: _over_capacity(study, candidate, reserved, at=at),
            )
            recorded, figures[depth, accum], use = _figures(study, small, cache, emulate, layout, check, stage_order(figures))
            layout.learn(figures[depth, accum], use)
            uses.append(use)
            at, goal = _point_names(study, candidate, (depth, accum))
            if recorded is not None and recorded.get("stopped_at_rank") is not None:
                return recorded, None, _combined_use(uses)
            if recorded is not None:
                return {**recorded, "reason": f"{recorded['reason']} ({_point_text(study, candidate, (depth, accum))})"}, None, use
            over = _over_capacity(study, candidate, figures[depth, accum]["peak_reserved_bytes"], at=at)
            if over is not None:  # the full depth and micro-batch count hold at least as much
                return _over_memory(f"{over}; {goal} holds at least as much", figures[depth, accum]), None, _combined_use(uses)
            if i == 1 and depths and depth == depths[0]:  # three corners: a bound before the deepest, dearest one
                over = _over_memory_by_three_corners(study, candidate, depths, accums, figures, fewest_at_full)
                if over is not None:
                    return over, None, _combined_use(uses)
        if i == 0 and accums:
            fewest_at_full = (extrapolate_figures({d: figures[d, accum] for d in depths}, study.full_depth, axis="depth")
                              if depths else figures[None, accum])
            over = _over_memory_at_fewest_microbatches(study, candidate, depths is not None, fewest_at_full, accum)
            if over is not None:
                return over, None, _combined_use(uses)
    use = _combined_use(uses)
    at_depth = {
        depth: extrapolate_figures({a: figures[depth, a] for a in accums}, candidate.accum) if accums else figures[depth, None]
        for depth in depths or (None,)
    }
    if depths is None:
        return None, at_depth[None], use
    return None, extrapolate_figures(at_depth, study.full_depth, axis="depth"), use


def _combined_use(uses: list[CacheUse]) -> CacheUse:
    """A miss if any point was emulated, else re-simulated if any was, else a hit."""
    return CacheUse.MISS if CacheUse.MISS in uses else CacheUse.RESIMULATED if CacheUse.RESIMULATED in uses else CacheUse.HIT


def _over_memory_at_fewest_microbatches(study: Study, candidate: Candidate, extrapolated: bool,
                                        at_full: dict, accum: int) -> dict | None:
    """The infeasible record of a configuration whose peak at its fewest emulated micro-batches
    (`at_full`: extrapolated to the full depth when `extrapolated`) already exceeds the GPU: more
    micro-batches only keep more activations or gradients alive, so the other micro-batch count need
    not be emulated. None if it fits."""
    where = f"accum={accum}" + (f", extrapolated to depth={study.full_depth}" if extrapolated else "")
    reason = _over_capacity(study, candidate, at_full["peak_reserved_bytes"], at=where)
    if reason is None:
        return None
    return _over_memory(f"{reason}; accum={candidate.accum} holds at least as much", at_full)


def _over_memory_by_three_corners(study: Study, candidate: Candidate, depths: tuple[int, int],
                                   accums: tuple[int, int], figures: dict, along_depth: dict) -> dict | None:
    """The infeasible record of a configuration whose memory, bounded from below by the corners
    (d1, a1), (d2, a1) and (d1, a2), exceeds the GPU; None if the bound fits.

    Each memory segment of each rank is affine in depth and in micro-batches with a non-negative
    cross term (a block's activations per micro-batch): m(L, A) >= m(L, a1) + m(d1, A) - m(d1, a1),
    the first extrapolated along depth at a1, the second along micro-batches at d1. A pipeline whose
    last stage keeps every micro-batch's output grows with A whatever its depth, which the check at
    the fewest micro-batches cannot see; this one sees it before the (d2, a2) corner is emulated.
    `along_depth`: the figures at a1 extrapolated to the full depth (the fewest micro-batches' check's)."""
    (d1, d2), (a1, a2) = depths, accums
    along_accum = extrapolate_figures({a1: figures[d1, a1], a2: figures[d1, a2]}, candidate.accum)
    deep, many, base = (f.get("memory_segments") or {} for f in (along_depth, along_accum, figures[d1, a1]))
    bound = max((x + y - z for rank in base if rank in deep and rank in many
                 for x, y, z in zip(deep[rank], many[rank], base[rank])), default=0)
    latest = figures[d1, a2]
    ratio = latest["peak_reserved_bytes"] / latest["peak_allocated_bytes"] if latest["peak_allocated_bytes"] else 1.0
    where = (f"depth={study.full_depth}, accum={candidate.accum}, bounded below from depth={d1} and {d2}, "
             f"accum={a1} and {a2}")
    peaks = {"peak_allocated_bytes": bound, "peak_reserved_bytes": round(bound * ratio)}
    reason = _over_capacity(study, candidate, peaks["peak_reserved_bytes"], at=where)
    return None if reason is None else _over_memory(reason, peaks)


def _over_memory(reason: str, figures: Mapping[str, Any]) -> dict:
    """The infeasible record of a configuration ruled out by the peaks in `figures` (a smaller point's)."""
    return {"status": TrialStatus.INFEASIBLE.value, "error": None, "reason": reason,
            "peak_allocated_bytes": figures["peak_allocated_bytes"], "peak_reserved_bytes": figures["peak_reserved_bytes"]}


def _over_capacity(study: Study, candidate: Candidate, peak_reserved_bytes: int, at: str | None = None) -> str | None:
    """Why a peak of `peak_reserved_bytes` (reached `at`, if given) does not fit the study's share of
    the GPU's memory; None when it fits."""
    capacity = candidate.cluster.gpu_spec.total_memory_bytes * study.max_memory_fraction
    if peak_reserved_bytes <= capacity:
        return None
    where = f" at {at}" if at else ""
    return (f"peak reserved {peak_reserved_bytes / _GIB:.1f} GiB{where} > max_memory_fraction="
            f"{study.max_memory_fraction} of {candidate.cluster.gpu}'s memory ({capacity / _GIB:.1f} GiB)")


def _lookup_or_emulate(study: Study, candidate: Candidate, cache: TraceCache, key: str, sim_key: str, inputs: dict,
                       emulate: Callable[..., Any], layout: _LayoutClasses, after_rank: RankMemoryCheck | None = None,
                       first_ranks: Sequence[int] = (), host: Mapping[str, float] | None = None):
    """(cluster-independent end or None, figures or None, where they came from); called under the key's lock.

    An emulation that `after_rank` stops leaves nothing in the cache (its verdict is the
    configuration's, not the key's: another configuration may share the point) and returns the
    infeasible record with `stopped_at_rank` set. `host`: the study's host figures for the candidate's
    GPU (None: the shipped ones)."""
    recorded = cache.read_outcome(key)
    if recorded is not None:
        return recorded, None, CacheUse.HIT
    figures = cache.read_figures(key, sim_key)
    if figures is not None:
        return None, figures, CacheUse.HIT
    trace_dir = cache.trace_dir(key)
    if trace_dir is not None:
        try:
            figures = figures_from_summary(resimulate(trace_dir, candidate.cluster, host), trace_dir)
            cache.write_figures(key, sim_key, figures, inputs)
            return None, figures, CacheUse.RESIMULATED
        except NotImplementedError as e:
            log.info("emulating again instead of re-simulating %s: %s", trace_dir, e)
    trace_dir = cache.new_trace_dir(key, sim_key)
    started = time.perf_counter()
    try:
        summary = emulate(str(study.script), list(candidate.argv), gpu=candidate.cluster.gpu, nnodes=candidate.cluster.nodes,
                          nproc_per_node=candidate.cluster.gpus_per_node, trace_dir=trace_dir,
                          variant_families=layout.families, zero_only_families=layout.zero_only,
                          rank_classes=layout.classes, cluster=candidate.cluster,
                          max_rank_classes=study.max_rank_classes, after_rank=after_rank, first_ranks=first_ranks,
                          host_profile=host)
    except RankCheckStop as e:
        shutil.rmtree(trace_dir, ignore_errors=True)  # not a complete emulation of the key
        # only a RankMemoryCheck stops an emulation here, and it keeps the bound that stopped it
        return _over_memory(e.reason, after_rank.peaks) | {"stopped_at_rank": e.result.rank}, None, CacheUse.MISS
    except TooManyRankClassesError as e:  # decided by the layout alone: every configuration of this key fails so
        recorded = {"status": TrialStatus.FAILED.value, "reason": f"{type(e).__name__}: {e}",
                    "error": traceback.format_exc()}
        cache.write_outcome(key, recorded, inputs)
        return recorded, None, CacheUse.MISS
    emulate_s = time.perf_counter() - started
    if summary.exit_code != 0:
        recorded = _script_end(summary, candidate)
        cache.write_outcome(key, recorded, inputs)
        return recorded, None, CacheUse.MISS
    figures = figures_from_summary(summary, trace_dir, after_rank.segments if after_rank is not None else None)
    figures["emulate_s"] = emulate_s
    cache.write_figures(key, sim_key, figures, inputs)
    return None, figures, CacheUse.MISS


def emulate_with_log(script: str, argv: list[str], *, gpu: str, nnodes: int, nproc_per_node: int, trace_dir: Path,
                     variant_families: list[int] | None = None, cluster=None, max_rank_classes: int | None = None,
                     after_rank: RankCheck | None = None, first_ranks: Sequence[int] = (),
                     rank_classes: Mapping[int, int] | None = None, host_profile: Mapping[str, float] | None = None,
                     zero_only_families: Sequence[int] = ()):
    """`maya.emulate` in this process (several ranks one after another) into `trace_dir`, simulated
    on `cluster`; the script's own prints (loss lines, progress bars) go to `trace_dir/script.log`.
    `after_rank`, `first_ranks`, `rank_classes`, `host_profile` and `zero_only_families` as `maya.emulate`
    takes them."""
    from maya.api import emulate

    trace_dir = Path(trace_dir)
    trace_dir.mkdir(parents=True, exist_ok=True)
    with open(trace_dir / "script.log", "w") as out, contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        return emulate(script, argv, gpu=gpu, nnodes=nnodes, nproc_per_node=nproc_per_node, trace_dir=trace_dir,
                       variant_families=variant_families, cluster=cluster, in_process=True,
                       max_rank_classes=max_rank_classes, after_rank=after_rank, first_ranks=first_ranks,
                       rank_classes=rank_classes, host_profile=host_profile, zero_only_families=zero_only_families)


def _script_end(summary, candidate: Candidate) -> dict:
    """The cluster-independent record of a run that did not finish: out of memory or failed
    (`summary`: an `EmulationSummary`, or one rank's `RankResult`)."""
    if summary.oom:
        reason = f"out of memory on {candidate.cluster.gpu}: {error_summary(summary.error, 'OutOfMemoryError')}"
        status = TrialStatus.INFEASIBLE
    else:
        reason = f"the script failed: {error_summary(summary.error) or f'exit status {summary.exit_code}'}"
        status = TrialStatus.FAILED
    return {
        "status": status.value, "reason": reason, "error": summary.error,
        "peak_allocated_bytes": summary.peak_allocated_bytes, "peak_reserved_bytes": summary.peak_reserved_bytes,
    }


_EXCEPTION_LINE = re.compile(r"^(?:\[rank \d+\] )?([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)):(.*)$")


def error_summary(traceback_text: str | None, prefer: str | None = None) -> str:
    """One line for a traceback: its last `SomeError: message` line (the last `prefer` one if any).

    An exception whose message starts on the next lines (torch.distributed.pipelining wraps errors
    so) gets those lines joined on.
    """
    lines = (traceback_text or "").splitlines()
    found = [(i, m) for i, m in ((i, _EXCEPTION_LINE.match(line)) for i, line in enumerate(lines)) if m]
    if prefer is not None and any(prefer in m.group(1) for _, m in found):
        found = [(i, m) for i, m in found if prefer in m.group(1)]
    if not found:
        return next((line.strip() for line in reversed(lines) if line.strip()), "")
    i, match = found[-1]
    message = match.group(2).strip()
    if not message:
        message = " ".join(line.strip() for line in lines[i + 1:i + 4] if line.strip())
    return f"{match.group(1)}: {message}"


def steady_step_ms(iteration_ms: list[float]) -> float | None:
    """The median iteration time after the first (which also allocates the optimizer state), ms."""
    if not iteration_ms:
        return None
    return statistics.median(iteration_ms[1:] if len(iteration_ms) > 1 else iteration_ms)


def figures_from_summary(summary, trace_dir: Path, segments: dict[str, list[int]] | None = None) -> dict:
    """The cached figures of a finished `EmulationSummary`, with the peak's parts for extrapolation
    (`maya.tune.accum_extrapolation.memory_segments` of every emulated rank, and the rank the peak is of);
    `segments`: those parts where already computed (a `RankMemoryCheck`'s), else read from the traces."""
    from maya.trace.store import read_meta

    iteration_ms = [it.time_ms for it in summary.iterations if it.time_ms is not None]
    extra = summary.extra
    meta = read_meta(trace_dir)
    representative = meta.get("rank_to_representative") or {}
    slowest = extra.get("slowest_rank", summary.emulated_ranks[0])
    return {
        "memory_segments": ({str(r): segments[str(r)] for r in summary.emulated_ranks}
                            if segments and all(str(r) in segments for r in summary.emulated_ranks)
                            else memory_segments(trace_dir, summary.emulated_ranks)),
        "memory_rank": int(representative.get(str(slowest), slowest)),
        "variant_families": meta.get("variant_families"),
        "iteration_ms": iteration_ms,
        "step_time_ms": steady_step_ms(iteration_ms),
        "peak_allocated_bytes": summary.peak_allocated_bytes,
        "peak_reserved_bytes": summary.peak_reserved_bytes,
        "breakdown_ms": extra.get("breakdown_ms", {}),
        "top_ops": extra.get("top_ops", [])[:TOP_OPS_KEPT],
        "timeline": extra.get("timeline"),
        "trace_dir": str(trace_dir),
    }


def _with_cost(study: Study, candidate: Candidate, figures: dict, use: CacheUse, elapsed: float, launch: dict) -> TrialOutcome:
    step_ms = figures["step_time_ms"]
    common = {
        "peak_allocated_bytes": figures["peak_allocated_bytes"], "peak_reserved_bytes": figures["peak_reserved_bytes"],
        "cache": use, "evaluate_s": elapsed, "breakdown_ms": figures["breakdown_ms"], "top_ops": figures["top_ops"],
        "timeline": figures["timeline"], "accum_emulated": _counts_text(figures.get("accum_emulated")),
        "depth_emulated": _counts_text(figures.get("depth_emulated")), **launch,
    }
    if step_ms is None:
        return TrialOutcome(status=TrialStatus.FAILED, objective=INFEASIBLE_OBJECTIVE,
                            reason="no complete iteration: the script never reached optimizer.step()", **common)
    reason = _over_capacity(study, candidate, figures["peak_reserved_bytes"])
    if reason is not None:
        return TrialOutcome(status=TrialStatus.INFEASIBLE, objective=INFEASIBLE_OBJECTIVE, reason=reason,
                            step_time_ms=step_ms, **common)
    time_s = time_to_train_s(step_ms, study.steps_to_train)
    cost = training_cost_usd(time_s, candidate.world_size, candidate.cluster.price_per_gpu_hour_usd)
    value = objective_value(study.objective, time_s, cost)
    if value == INFEASIBLE_OBJECTIVE:
        return TrialOutcome(status=TrialStatus.FAILED, objective=value, step_time_ms=step_ms,
                            reason=f"non-finite prediction: step_time_ms={step_ms}", **common)
    return TrialOutcome(status=TrialStatus.OK, objective=value, step_time_ms=step_ms, time_to_train_s=time_s,
                        cost_usd=cost, **common)


def _counts_text(counts: list[int] | None) -> str | None:
    """`[8, 16]` -> "8,16" (a results-table cell)."""
    return ",".join(map(str, counts)) if counts else None


def _failed(error: BaseException, started: float, **launch) -> TrialOutcome:
    text = "".join(traceback.format_exception(error))
    return TrialOutcome(status=TrialStatus.FAILED, reason=f"{type(error).__name__}: {error}".splitlines()[0],
                        error=text, objective=INFEASIBLE_OBJECTIVE, evaluate_s=time.perf_counter() - started, **launch)
