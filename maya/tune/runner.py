"""`run_study`: run a study on Ray Tune and write its results.

Trials run as Ray Tune function trainables, `cpus_per_trial` CPUs each, as many at once as the Ray
cluster has CPUs for; each calls `maya.emulate` in its own worker process, several ranks one after
another (see `maya.tune.trial_resources`; the trace cache shares work between trials). The experiment lives in `OUT/tune/`, so an interrupted study resumes with
Tune's restore (`resume=True`): finished trials are kept and the search algorithm's state is
reloaded.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path

from maya.tune.preflight import preflight
from maya.tune.results import DETAIL_KEYS, TuneResults, results_table, row_from_trial
from maya.tune.search_setup import METRIC, search_setup
from maya.tune.space import full_space
from maya.tune.study import Study

log = logging.getLogger(__name__)

EXPERIMENT_DIR = "tune"
CACHE_DIR = "trace_cache"


def run_study(
    study: Study,
    out_dir: str | os.PathLike,
    *,
    resume: bool = False,
    address: str | None = None,
    progress: Callable[[str], None] | None = None,
    trace_cache_dir: str | os.PathLike | None = None,
) -> TuneResults:
    """Search `study`'s space on Ray and write the result files to `out_dir`.

    Args:
        study: the study (checked with `preflight` before Ray starts).
        out_dir: where the results, the Tune experiment and (by default) the trace cache go.
        resume: continue the interrupted study in `out_dir` instead of starting one. Ray Tune
            restores its search settings and its progress sink as they were first given.
        address: Ray cluster to use; None: the running one (`RAY_ADDRESS`, `ray start`), else a new
            local one. An already initialised Ray is used as it is.
        progress: called with one line per finished trial (picklable: a module-level function);
            None: the `maya.tune.progress` logger.
        trace_cache_dir: the trace cache (share one between studies of the same script, or put it
            on a shared file system for a multi-node cluster); default `out_dir/trace_cache`.

    Raises:
        StudyFieldError: the study cannot work (before any Ray work).
        FileExistsError: `out_dir` already holds a study and `resume` is False.
        FileNotFoundError: `resume` is True but `out_dir` holds no study to resume.
    """
    space_summary = preflight(study)
    setup = search_setup(study)
    out = Path(out_dir).resolve()
    experiment = out / EXPERIMENT_DIR
    if experiment.exists() and not resume:
        raise FileExistsError(f"{out} already holds a study: resume it, or choose another output directory")
    import ray
    from ray import tune
    from ray.tune.search import Searcher

    from maya.emulator.allocator_config import environment_settings
    from maya.tune.progress import ProgressCallback, log_line
    from maya.tune.pruning_searcher import (
        PRUNED_LOG,
        SEARCHER_STATS,
        PruningSearcher,
        read_pruned,
        read_searcher_stats,
    )
    from maya.tune.trainable import run_trial
    from maya.tune.trial_resources import max_concurrent_trials, trial_resources

    if resume and not tune.Tuner.can_restore(str(experiment)):
        raise FileNotFoundError(f"no study to resume in {out}")
    if not ray.is_initialized():
        # The allocator settings of this environment reach the trials' emulations (they change reserved
        # memory, so which configurations fit), wherever Ray starts their workers.
        alloc_env = environment_settings()
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": alloc_env} if alloc_env else None)
    cache_dir = Path(trace_cache_dir).resolve() if trace_cache_dir is not None else out / CACHE_DIR
    search_alg = setup.search_alg
    if isinstance(search_alg, Searcher):  # HyperOpt: prune inside the searcher (random and grid go through trials)
        search_alg = PruningSearcher(search_alg, study, metric=METRIC, max_configs=setup.num_samples,
                                     log_path=out / PRUNED_LOG, emit=progress or log_line)
    trainable = tune.with_resources(
        tune.with_parameters(run_trial, study=study, cache_dir=str(cache_dir)),
        trial_resources(study),
    )
    concurrency = max_concurrent_trials(study)
    dimensions = list(full_space(study))
    total = space_summary.grid_size if space_summary.grid_size is not None else setup.num_samples
    if resume:
        tuner = tune.Tuner.restore(str(experiment), trainable=trainable, resume_unfinished=True,
                                   resume_errored=False, param_space=setup.param_space)
    else:
        callback = ProgressCallback(total=total, objective=study.objective, dimensions=dimensions, emit=progress or log_line,
                                    pruned_log=out / PRUNED_LOG)
        tuner = tune.Tuner(
            trainable,
            param_space=setup.param_space,
            tune_config=tune.TuneConfig(
                metric=METRIC, mode="min", search_alg=search_alg, num_samples=setup.num_samples,
                max_concurrent_trials=concurrency, reuse_actors=True, time_budget_s=study.time_budget_s,
                trial_dirname_creator=trial_dirname,
            ),
            run_config=tune.RunConfig(
                name=EXPERIMENT_DIR, storage_path=str(out), verbose=0, callbacks=[callback],
                failure_config=tune.FailureConfig(max_failures=0, fail_fast=False),
            ),
        )
    log.info("study %s: %d trials, %d of %d layouts runnable, at most %s at once", study.name, total,
             space_summary.runnable, space_summary.layouts, concurrency or "as many as the CPUs allow")
    grid = tuner.fit()
    results = collect(grid, dimensions, study.objective, read_pruned(out / PRUNED_LOG))
    best = results.best
    timeline = _read_file(best.get("timeline"), best.get("node_id")) if best else None
    from dataclasses import replace

    from maya.tune.report import write_report, write_study_record

    files = write_report(results, out, top_k=study.top_k, timeline=timeline, title=f"{study.name}: {study.objective}")
    searcher = read_searcher_stats(out / SEARCHER_STATS)
    unfinished = 0 if searcher.get("space_exhausted") else max(0, total - len(results.table))
    results = replace(results, files=files, unfinished_trials=unfinished, searcher=searcher)
    write_study_record(results, out, top_k=study.top_k)
    return results


def collect(grid, dimensions: list[str], objective: str, pruned: list[dict] = ()) -> TuneResults:
    """`TuneResults` from a Ray Tune `ResultGrid` (trials that did not finish are left out) and the
    rows of configurations pruned inside the searcher."""
    rows, details = list(pruned), {}
    for result in grid:
        metrics = result.metrics or {}
        trial_id = metrics.get("trial_id") or Path(result.path).name
        if "status" not in metrics and result.error is None:  # interrupted before it reported: resume runs it
            continue
        row = row_from_trial(trial_id, dict(result.config or {}), metrics, result.error)
        details[trial_id] = {k: row.pop(k) for k in DETAIL_KEYS if k in row}
        if isinstance(details[trial_id].get("top_ops"), str):
            details[trial_id]["top_ops"] = json.loads(details[trial_id]["top_ops"])
        rows.append(row)
    return TuneResults(table=results_table(rows, dimensions), objective=objective, dimensions=tuple(dimensions), details=details)


def trial_dirname(trial) -> str:
    """Short trial directories (Tune's default spells out the whole configuration)."""
    return trial.trial_id


def _read_file(path: str | None, node_id: str | None) -> bytes | None:
    """A file's bytes from this machine, or from the Ray node that wrote it."""
    if not path:
        return None
    if Path(path).is_file():
        return Path(path).read_bytes()
    if node_id is None:
        return None
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    @ray.remote(num_cpus=0)
    def read(p: str) -> bytes | None:
        return Path(p).read_bytes() if Path(p).is_file() else None

    try:
        return ray.get(read.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False)).remote(path))
    except Exception as e:  # the node is gone: the study's results stand without the timeline
        log.warning("could not fetch the best configuration's timeline %s from node %s: %s", path, node_id, e)
        return None
