"""How a study's trials use the Ray cluster's CPUs.

Every trial evaluates its configuration in its own worker process and reserves `cpus_per_trial`
CPUs (one by default), so the cluster runs one trial per CPU at once. A multi-rank configuration's
rank classes are emulated one after another inside the trial (`maya.emulate(..., in_process=True)`)
rather than as Ray tasks: a study keeps every CPU busy with trials anyway, and Ray Tune reuses the
trial's process (`reuse_actors=True`), whose torch, Maya and dispatcher stay warm from one
configuration to the next. (Emulating each rank in a fresh Ray worker cost about 5 s of start-up per
rank; the first tuner emulated worlds in Ray tasks outside the trials and spent most of its time so.)
"""

from __future__ import annotations

from maya.tune.study import Study


def trial_resources(study: Study) -> dict[str, float]:
    """Ray Tune resources of every trial of `study`."""
    return {"cpu": study.cpus_per_trial}


def max_concurrent_trials(study: Study) -> int | None:
    """The study's own bound on trials at once; None: as many as the CPUs allow."""
    return study.max_concurrent_trials
