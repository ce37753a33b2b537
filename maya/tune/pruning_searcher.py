"""`PruningSearcher`: rule out configurations inside the search algorithm, before they become trials.

A Ray Tune trial costs a slot in the trial queue: with multi-rank candidates at most one trial per
CPU runs at once, so a configuration that breaks a divisibility rule waited behind minutes of
emulation only to be pruned in a millisecond. This wrapper asks the search algorithm for a
configuration, resolves it (`maya.tune.candidate.resolve_candidate`, the same rules a trial applies),
and when it is pruned tells the algorithm at once (the objective `INFEASIBLE_OBJECTIVE`, as a pruned
trial would report) and asks again. Only runnable configurations reach Tune.

Pruned configurations still count towards the study's `num_samples` (a configuration tried is a
configuration tried), are appended to a JSON-lines log in the study directory (`pruned.jsonl`, read
back into the results table, kept across a resumed study), and are announced through `emit`.
"""

from __future__ import annotations

import itertools
import json
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ray.tune.search import Searcher

from maya.tune.candidate import PrunedConfig, resolve_candidate
from maya.tune.cost import INFEASIBLE_OBJECTIVE
from maya.tune.study import Study

PRUNED_LOG = "pruned.jsonl"
"""File of the study directory that holds the configurations pruned inside the searcher."""


class PruningSearcher(Searcher):
    """Wraps a `Searcher`: pruned configurations are answered and logged, runnable ones returned."""

    def __init__(self, inner: Searcher, study: Study, *, metric: str, max_configs: int, log_path: str | os.PathLike,
                 emit: Callable[[str], None] | None = None) -> None:
        super().__init__()  # metric and mode stay Tune's (TuneConfig); the inner searcher gets them
        self.objective_key = metric
        self.inner = inner
        self.study = study
        self.max_configs = max_configs
        """Configurations to propose in all, pruned ones included (the study's num_samples)."""
        self.log_path = str(log_path)
        self.emit = emit
        self.suggested = 0
        self.pruned = 0
        self._inner_ids: dict[str, str] = {}
        self._specs: dict = {}

    def set_search_properties(self, metric: str | None, mode: str | None, config: dict, **spec) -> bool:
        return self.inner.set_search_properties(metric, mode, config, **spec)

    def set_max_concurrency(self, max_concurrent: int) -> bool:
        return self.inner.set_max_concurrency(max_concurrent)

    def suggest(self, trial_id: str) -> dict | str | None:
        for attempt in itertools.count():
            if self.suggested >= self.max_configs:
                return Searcher.FINISHED
            inner_id = trial_id if attempt == 0 else f"{trial_id}_p{attempt}"
            config = self.inner.suggest(inner_id)
            if config is None or config == Searcher.FINISHED:
                return config
            self.suggested += 1
            try:
                resolve_candidate(self.study, config, self._specs)
            except PrunedConfig as e:
                self.inner.on_trial_complete(inner_id, {self.objective_key: INFEASIBLE_OBJECTIVE})
                self._log(inner_id, config, e.reason)
                continue
            except Exception:  # the study's own check raised: the trial records it as failed
                pass
            self._inner_ids[trial_id] = inner_id
            return config
        raise AssertionError("unreachable")

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        self.inner.on_trial_result(self._inner_ids.get(trial_id, trial_id), result)

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        self.inner.on_trial_complete(self._inner_ids.pop(trial_id, trial_id), result=result, error=error)

    def _log(self, trial_id: str, config: dict, reason: str) -> None:
        self.pruned += 1
        row = {"trial_id": trial_id, **config, "status": "pruned", "reason": reason, "objective": INFEASIBLE_OBJECTIVE}
        path = Path(self.log_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as f:
            f.write(json.dumps(row, default=str) + "\n")
        if self.emit is not None:
            dims = " ".join(f"{k}={v}" for k, v in config.items())
            self.emit(f"[{self.suggested}/{self.max_configs}] pruned     {reason}  {dims}")

    def save(self, checkpoint_path: str) -> None:
        self.inner.save(checkpoint_path + ".inner")
        state = {k: getattr(self, k) for k in ("suggested", "pruned", "_inner_ids", "max_configs", "log_path")}
        with open(checkpoint_path, "wb") as f:
            pickle.dump(state, f)

    def restore(self, checkpoint_path: str) -> None:
        self.inner.restore(checkpoint_path + ".inner")
        with open(checkpoint_path, "rb") as f:
            for k, v in pickle.load(f).items():
                setattr(self, k, v)


def read_pruned(log_path: str | os.PathLike) -> list[dict[str, Any]]:
    """The rows `PruningSearcher` logged (none when the file does not exist)."""
    path = Path(log_path)
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
