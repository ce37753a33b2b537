"""The cost model of a study: what training the fixed work takes in time and in money (pure functions)."""

from __future__ import annotations

import math

SECONDS_PER_HOUR = 3600.0

INFEASIBLE_OBJECTIVE = 1e18
"""What the search algorithm is told for a configuration that cannot run (pruned, out of memory,
failed): finite, so that TPE ranks it below every configuration that runs instead of dropping it."""


def time_to_train_s(step_time_ms: float, steps: int) -> float:
    """Wall time to train the fixed work, seconds: time_to_train_s = step_time_ms / 1000 * steps.

    `step_time_ms` is one optimizer step at the study's global batch (all micro-batches of
    gradient accumulation included), as the simulator predicts it for the slowest rank.
    """
    return step_time_ms / 1000.0 * steps


def training_cost_usd(time_s: float, world_size: int, price_per_gpu_hour_usd: float) -> float:
    """Cost of training the fixed work, US dollars, billed per GPU-hour for every GPU of the job:

        cost_usd = time_to_train_s / 3600 * world_size * price_per_gpu_hour_usd

    This is on-demand pricing: the GPUs are paid for the whole run, idle or not; set-up time,
    checkpointing and failed runs are not included.
    """
    return time_s / SECONDS_PER_HOUR * world_size * price_per_gpu_hour_usd


def objective_value(objective: str, time_s: float | None, cost_usd: float | None) -> float:
    """The number the search minimises: `cost_usd` for `cost`, `time_s` for `time`.

    A missing or non-finite figure (the configuration did not run, or a prediction came out NaN or
    infinite) gives `INFEASIBLE_OBJECTIVE`, so the search algorithm never sees NaN or inf.
    """
    value = cost_usd if objective == "cost" else time_s
    if value is None or not math.isfinite(value):
        return INFEASIBLE_OBJECTIVE
    return float(value)
