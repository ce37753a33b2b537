"""The Ray Tune trainable: one trial evaluates one configuration in its worker process and reports once."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from maya.tune.evaluate import evaluate
from maya.tune.study import Study
from maya.tune.trace_cache import TraceCache

# ClusterSpecs read by earlier trials of this worker, keyed by (ClusterCandidate, nodes): with
# reused actors, a preset's YAML is read once per worker, not once per trial.
_SPECS: dict = {}


def run_trial(config: dict[str, Any], *, study: Study, cache_dir: str) -> None:
    """Evaluate `config` in this process and `tune.report` its `TrialOutcome` (status, objective,
    time, cost, memory); a multi-rank configuration's ranks are emulated here one after another."""
    import ray
    from ray import tune

    outcome = evaluate(study, config, TraceCache(Path(cache_dir)), _SPECS)
    outcome = replace(outcome, node_id=ray.get_runtime_context().get_node_id())
    tune.report(outcome.to_metrics())
