"""How a study's trials use the Ray cluster's CPUs, and where their emulations run.

A study whose candidates are all single GPUs emulates each configuration inside the trial's own
process, and a trial reserves `cpus_per_trial` CPUs.

A study with multi-rank candidates cannot do that: `maya.emulate` runs a world's rank classes on
Ray actors of one CPU each and writes the traces through a Ray Dataset, and inside a trial both
would be confined to the trial's placement group, where a Dataset never gets a CPU (all of them
reserved) and the actors compete with the trial itself. So there every emulation runs in a Ray task
outside the trial's placement group, on the trial's node (where its trace cache is): a one-GPU
configuration's task takes one CPU, a world's coordinating task none (its actors take theirs). The
trial only waits and reserves a token `COORDINATOR_CPUS`; at most one trial per cluster CPU runs
at once unless the study says otherwise, which keeps every CPU busy with emulation while bounding
the number of worker processes.
"""

from __future__ import annotations

import math
from typing import Any

from maya.tune.study import Study

COORDINATOR_CPUS = 0.01
"""CPUs a trial of a multi-rank study reserves for itself: it only waits for its emulation task."""


def needs_rank_actors(study: Study) -> bool:
    """Whether some candidate cluster (at some node count) has more than one GPU (reads the presets)."""
    return any(c.spec(n).world_size > 1 for c in study.clusters for n in c.nodes)


def trial_resources(study: Study, multi_rank: bool) -> dict[str, float]:
    """Ray Tune resources of every trial of `study` (see the module docstring)."""
    return {"cpu": COORDINATOR_CPUS if multi_rank else study.cpus_per_trial}


def max_concurrent_trials(study: Study, multi_rank: bool, cluster_cpus: float) -> int | None:
    """The study's own bound, else one trial per cluster CPU for a multi-rank study, else Tune's (None)."""
    if study.max_concurrent_trials is not None:
        return study.max_concurrent_trials
    return max(1, math.floor(cluster_cpus)) if multi_rank else None


def emulate_outside_trial(script: str, argv: list[str], *, gpu: str, nnodes: int, nproc_per_node: int,
                          trace_dir: Any, variant_families: list[int] | None = None):
    """`maya.tune.evaluate.emulate_with_log` in a Ray task on this node, outside the trial's placement group."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from maya.tune.evaluate import emulate_with_log

    # An explicit node-affinity strategy also opts the task out of the trial's placement group.
    here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
    task = ray.remote(emulate_with_log).options(num_cpus=1 if nnodes * nproc_per_node == 1 else 0, scheduling_strategy=here)
    return ray.get(task.remote(script, argv, gpu=gpu, nnodes=nnodes, nproc_per_node=nproc_per_node, trace_dir=trace_dir,
                               variant_families=variant_families))
