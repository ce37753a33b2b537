"""`ProgressCallback`: one line per finished trial while a study runs, with the best so far."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from ray.tune import Callback

from maya.tune.cost import INFEASIBLE_OBJECTIVE

log = logging.getLogger(__name__)


def log_line(line: str) -> None:
    """The default sink: the `maya.tune.progress` logger at INFO."""
    log.info("%s", line)


class ProgressCallback(Callback):
    """Emits `[done/total] status figures config (cache) | best ...` as each trial finishes.

    `emit` must be picklable (a module-level function): Ray Tune saves callbacks with the study so
    that it can be resumed.
    """

    def __init__(self, *, total: int, objective: str, dimensions: list[str], emit: Callable[[str], None] = log_line,
                 pruned_log: str | os.PathLike | None = None) -> None:
        self.total = total
        self.pruned_log = str(pruned_log) if pruned_log is not None else None
        """`maya.tune.pruning_searcher`'s log: its configurations count as done."""
        self.objective = objective
        self.dimensions = dimensions
        self.emit = emit
        self.done = 0
        self.best: float | None = None
        self._counted = False

    def on_step_begin(self, iteration: int, trials: list, **info) -> None:
        # A resumed study starts with the trials that finished before the interruption.
        if not self._counted:
            self._counted = True
            self.done = sum(t.status in ("TERMINATED", "ERROR") for t in trials)

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info) -> None:
        self.done += 1
        self.emit(self.describe(trial.last_result or {}, trial.config))

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info) -> None:
        self.done += 1
        error = str(getattr(trial, "error_file", None) or "see the trial's error file")
        self.emit(f"[{self.finished}/{self.total}] failed   the trial process crashed ({error}) {self._config(trial.config)}")

    @property
    def finished(self) -> int:
        """Trials done plus configurations pruned inside the searcher."""
        if self.pruned_log is None or not os.path.exists(self.pruned_log):
            return self.done
        with open(self.pruned_log, "rb") as f:
            return self.done + sum(1 for _ in f)

    def describe(self, result: dict, config: dict) -> str:
        """The progress line of one finished trial."""
        status = result.get("status", "?")
        value = result.get("objective", INFEASIBLE_OBJECTIVE)
        if status == "ok" and value < INFEASIBLE_OBJECTIVE and (self.best is None or value < self.best):
            self.best = value
        if status == "ok":
            figures = f"{result['step_time_ms']:.1f} ms/step  {_hours(result['time_to_train_s'])}  ${result['cost_usd']:,.2f}"
        else:
            figures = result.get("reason") or ""
        cache = f" ({result['cache']})" if result.get("cache") else ""
        best = "" if self.best is None else f"  | best {self._format(self.best)}"
        return f"[{self.finished}/{self.total}] {status:<10} {figures}  {self._config(config)}{cache}{best}"

    def _config(self, config: dict) -> str:
        return " ".join(f"{k}={config[k]}" for k in self.dimensions if k in config)

    def _format(self, value: float) -> str:
        return f"${value:,.2f}" if self.objective == "cost" else _hours(value)


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h"
