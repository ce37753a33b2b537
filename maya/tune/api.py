"""`tune`: the library form of `maya tune config.py`."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from maya.tune.results import TuneResults
from maya.tune.study import ClusterCandidate, Study


def tune(
    search_space: Mapping[str, Any],
    *,
    script: str | os.PathLike,
    global_batch: int,
    clusters: Sequence[ClusterCandidate | Mapping[str, Any] | str],
    script_args: Sequence[str] = (),
    train_steps: int | None = None,
    train_tokens: int | None = None,
    out_dir: str | os.PathLike | None = None,
    resume: bool = False,
    address: str | None = None,
    progress: Callable[[str], None] | None = None,
    **study_fields: Any,
) -> TuneResults:
    """Search training configurations of `script` for the cheapest (or fastest) that fits.

    Example, the single-GPU study of examples/tune_gpt.py:

        from ray import tune as rt
        results = maya.tune(
            {"micro_batch": rt.choice([4, 8, 16]), "checkpoint": rt.choice(["none", "nonreentrant"])},
            script="examples/train_gpt.py", script_args=["--steps", "2"], global_batch=16, train_steps=1000,
            clusters=[{"preset": "dgx-h200", "gpus_per_node": 1}], search="grid",
        )
        results.best_config, results.table

    Args:
        search_space: Ray Tune space; `micro_batch` is required, `tp`, `pp`, `pp_schedule`,
            `dp_mode`, `cluster` and `nodes` have their layout meaning, any other key is a script flag.
        script: the unmodified training script.
        global_batch: samples per optimizer step, kept by every configuration.
        clusters: candidate clusters: `ClusterCandidate`s, dicts of its fields or preset names.
        script_args: flags passed in every configuration.
        train_steps: optimizer steps of the fixed work (or `train_tokens` with `tokens_per_sample`).
        train_tokens: tokens of the fixed work.
        out_dir: where results go; a new temporary directory by default.
        resume: continue the interrupted study in `out_dir`.
        address: Ray cluster address (default: the running one, else a new local one).
        progress: called with one line per finished trial.
        **study_fields: any other `Study` field (objective, search, num_samples, max_gpus, check,
            host_profiles as GPU -> `maya profile --families host` output path, ...).

    Returns:
        The results: `table` (a DataFrame of every trial), `best`, `best_config`, `top(k)`, `pareto()`.

    Raises:
        StudyFieldError: the study cannot work (raised before Ray starts).
    """
    from maya.tune.config_file import cluster_candidate
    from maya.tune.study import resolve_host_profiles

    if "host_profiles" in study_fields:  # paths are read here, so that remote trials need no files
        study_fields["host_profiles"] = resolve_host_profiles(study_fields["host_profiles"])
    study = Study(
        script=Path(script).resolve(),
        search_space=dict(search_space),
        global_batch=global_batch,
        clusters=tuple(cluster_candidate(c) for c in clusters),
        script_args=tuple(str(a) for a in script_args),
        train_steps=train_steps,
        train_tokens=train_tokens,
        **study_fields,
    )
    from maya.tune.runner import run_study

    out = Path(out_dir) if out_dir is not None else Path(tempfile.mkdtemp(prefix="maya-tune-"))
    return run_study(study, out, resume=resume, address=address, progress=progress)
