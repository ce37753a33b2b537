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

A configuration proposed again is not a new trial either, nor is one that launches what an earlier
one did (same cluster, node count and script arguments: a pipeline schedule without a pipeline). HyperOpt's TPE proposes its favourites
again and again as it converges (a 30-minute run of examples/tune_llama.py: 2,381 trials, 480
distinct configurations; benchmarks/results/tune_throughput_llama_depth34.json). A repeat of a
finished configuration is answered at once with that trial's objective (a repeat of one still
running, as an error, which TPE leaves out), does not count towards `num_samples`, and the algorithm
is asked again. After `MAX_REPEATS` repeats in a row the searcher draws a configuration nobody has
proposed yet, uniformly from the listable space (seeded with the study's seed), and when every
configuration of the space has been proposed, the study is finished. Once it has drawn, it asks the
algorithm only once per trial before drawing again, until the algorithm proposes something new: every
answered repeat is one more point HyperOpt's TPE reads at each proposal, so asking 20 times per trial
of a converged search made each proposal slower than the last (`python benchmarks/searcher_speed.py`,
benchmarks/results/searcher_speed.md: replaying the Llama study's space with a made-up objective,
70 s per 100 trials after 400 trials that way, 5-15 s with one ask up to 1,200 trials). Such a drawn configuration is
not told to HyperOpt (Ray's HyperOptSearch cannot take points it did not propose). A space with a
dimension that cannot be listed (a float range) returns the repeat as a trial, as before. How many
repeats were answered is written to `searcher.json` in the study directory. The same study then
covered 573 distinct configurations in 30 minutes (909 repeats answered, 199 drawn;
benchmarks/results/tune_throughput_llama_distinct.json).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import pickle
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ray.tune.search import Searcher

from maya.tune.candidate import PrunedConfig, resolve_candidate
from maya.tune.cost import INFEASIBLE_OBJECTIVE
from maya.tune.space import dimension_values, full_space
from maya.tune.study import Study

PRUNED_LOG = "pruned.jsonl"
"""File of the study directory that holds the configurations pruned inside the searcher."""
SEARCHER_STATS = "searcher.json"
"""File of the study directory with the searcher's counts (proposals, pruned, repeats answered)."""
MAX_REPEATS = 20
"""Repeated proposals in a row after which a configuration not yet proposed is drawn instead."""
REPEATS_AFTER_DRAW = 1
"""The same, after a draw, until the algorithm proposes something new (module docstring)."""
MAX_ENUMERATED = 200_000
"""A listable space larger than this is drawn from by rejection instead of being enumerated."""
_RUNNING = None  # the objective of a configuration whose trial has not finished
_FAILED = "failed"  # the objective of a configuration whose trial failed


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
        self.repeats = 0
        """Proposals of a configuration proposed before, answered without a trial."""
        self.drawn = 0
        """Configurations drawn from the unproposed part of the space after `MAX_REPEATS` repeats."""
        self.repeat_budget = MAX_REPEATS
        """Repeats in a row before drawing: `MAX_REPEATS`, `REPEATS_AFTER_DRAW` after a draw until the
        algorithm proposes something new."""
        self.exhausted = False
        """Every configuration of the space has been proposed: the study ends before num_samples."""
        self._inner_ids: dict[str, str | None] = {}  # Tune's trial id -> the inner searcher's (None: drawn)
        self._trial_identity: dict[str, str] = {}  # Tune's trial id -> what its configuration launches
        self._identity_of: dict[str, str] = {}  # configuration key -> what it launches (`_identity`)
        self._objectives: dict[str, Any] = {}  # what a configuration launches -> objective, _RUNNING or _FAILED
        self._specs: dict = {}
        self._rng = random.Random(study.seed)
        self._dimensions = _listable_dimensions(study)
        self._draw_order: list[dict] | None = None  # the listable space in a seeded shuffle, made at the first draw
        self.draw_cursor = 0
        """Position in that shuffle of the next configuration to draw."""

    def set_search_properties(self, metric: str | None, mode: str | None, config: dict, **spec) -> bool:
        return self.inner.set_search_properties(metric, mode, config, **spec)

    def set_max_concurrency(self, max_concurrent: int) -> bool:
        return self.inner.set_max_concurrency(max_concurrent)

    def suggest(self, trial_id: str) -> dict | str | None:
        repeats_in_a_row = 0
        for attempt in itertools.count():
            if self.suggested >= self.max_configs:
                self._write_stats()
                return Searcher.FINISHED
            inner_id = trial_id if attempt == 0 else f"{trial_id}_p{attempt}"
            if repeats_in_a_row >= self.repeat_budget and self._dimensions is not None:
                config, inner_id = self._draw_unproposed(), None
                if config is None:  # every configuration of the space has been proposed
                    self.exhausted = True
                    self._write_stats()
                    return Searcher.FINISHED
                self.drawn += 1
                self.repeat_budget = REPEATS_AFTER_DRAW
            else:
                config = self.inner.suggest(inner_id)
                if config is None or config == Searcher.FINISHED:
                    return config
            raw = _config_key(config)
            answer_repeats = repeats_in_a_row < self.repeat_budget or inner_id is None
            identity, pruned = self._identity_of.get(raw) if answer_repeats else None, None
            if identity is None:
                identity, pruned = self._resolve(config, raw)
                self._identity_of[raw] = identity
            if identity in self._objectives and answer_repeats:  # proposed before, or launches what one did
                self._answer_repeat(inner_id, identity)
                repeats_in_a_row += 1
                continue
            self.suggested += 1
            if inner_id is not None:  # the algorithm proposed something new: ask it again next time
                self.repeat_budget, repeats_in_a_row = MAX_REPEATS, 0
            if pruned is not None:
                self._objectives[identity] = INFEASIBLE_OBJECTIVE
                if inner_id is not None:
                    self.inner.on_trial_complete(inner_id, {self.objective_key: INFEASIBLE_OBJECTIVE})
                self._log(inner_id or f"{trial_id}_d{attempt}", config, pruned)
                continue
            self._objectives.setdefault(identity, _RUNNING)
            self._inner_ids[trial_id] = inner_id
            self._trial_identity[trial_id] = identity
            self._write_stats()
            return config
        raise AssertionError("unreachable")

    def _resolve(self, config: dict, raw: str) -> tuple[str, str | None]:
        """What `config` launches (`_identity`), and why it cannot run (None when it can). A pruned
        configuration, or one whose study check raised (its trial records the error), is its own key."""
        try:
            return _identity(resolve_candidate(self.study, config, self._specs)), None
        except PrunedConfig as e:
            return raw, e.reason
        except Exception:  # the study's own check raised: the trial records it as failed
            return raw, None

    def _answer_repeat(self, inner_id: str | None, identity: str) -> None:
        """Tell the inner searcher what the earlier configuration launching `identity` gave (an error
        while it runs or when it failed)."""
        self.repeats += 1
        if inner_id is None:
            return
        objective = self._objectives[identity]
        if objective is _RUNNING or objective == _FAILED:
            self.inner.on_trial_complete(inner_id, error=True)
        else:
            self.inner.on_trial_complete(inner_id, {self.objective_key: objective})

    def _draw_unproposed(self) -> dict | None:
        """A configuration of the listable space not proposed yet (None when there is none): the next
        unproposed one in a seeded shuffle of the whole space, drawn once; by rejection in a space of
        more than `MAX_ENUMERATED` configurations."""
        names, value_lists = self._dimensions
        if math.prod(len(values) for values in value_lists) > MAX_ENUMERATED:
            for _ in range(10_000):
                config = {n: self._rng.choice(values) for n, values in zip(names, value_lists)}
                if _config_key(config) not in self._identity_of:
                    return config
            return None
        if self._draw_order is None:
            self._draw_order = [dict(zip(names, combo)) for combo in itertools.product(*value_lists)]
            random.Random(self.study.seed).shuffle(self._draw_order)
        while self.draw_cursor < len(self._draw_order):
            config = self._draw_order[self.draw_cursor]
            self.draw_cursor += 1
            if _config_key(config) not in self._identity_of:
                return config
        return None

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        self.inner.on_trial_result(self._inner_ids.get(trial_id, trial_id), result)

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        identity = self._trial_identity.pop(trial_id, None)
        if identity is not None:
            objective = (result or {}).get(self.objective_key)
            self._objectives[identity] = _FAILED if error or objective is None else objective
        inner_id = self._inner_ids.pop(trial_id, trial_id)
        if inner_id is not None:
            self.inner.on_trial_complete(inner_id, result=result, error=error)
        self._write_stats()

    def _write_stats(self) -> None:
        stats = {"proposed": self.suggested, "pruned": self.pruned, "repeats_answered": self.repeats,
                 "drawn_unproposed": self.drawn, "space_exhausted": self.exhausted}
        path = Path(self.log_path).with_name(SEARCHER_STATS)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(stats) + "\n")

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
        state = {k: getattr(self, k) for k in ("suggested", "pruned", "repeats", "drawn", "repeat_budget", "exhausted",
                                              "draw_cursor", "_inner_ids", "_trial_identity", "_identity_of",
                                              "_objectives", "max_configs", "log_path")}
        state["_rng_state"] = self._rng.getstate()
        with open(checkpoint_path, "wb") as f:
            pickle.dump(state, f)

    def restore(self, checkpoint_path: str) -> None:
        self.inner.restore(checkpoint_path + ".inner")
        with open(checkpoint_path, "rb") as f:
            state = pickle.load(f)
        rng_state = state.pop("_rng_state", None)
        for k, v in state.items():
            setattr(self, k, v)
        if rng_state is not None:
            self._rng.setstate(rng_state)


def _config_key(config: dict) -> str:
    """The identity of a proposed configuration: its values by dimension name (NumPy scalars as the
    Python values they hold, so that HyperOpt's proposals and drawn configurations compare)."""
    return json.dumps(sorted((k, v.item() if hasattr(v, "item") else v) for k, v in config.items()), default=str)


def _identity(candidate) -> str:
    """What a runnable configuration launches: its cluster, node count and script arguments. Two
    configurations that launch the same are one (a pipeline schedule without a pipeline)."""
    return json.dumps([candidate.config["cluster"], candidate.config["nodes"], list(candidate.argv)])


def _listable_dimensions(study: Study) -> tuple[list[str], list[list]] | None:
    """The names and values of every dimension of the space (a constant has its one value, as HyperOpt's
    proposals carry it), or None when one of them cannot be listed."""
    names, value_lists = [], []
    for name, value in full_space(study).items():
        values = dimension_values(value)
        if values is None or isinstance(value, dict) and set(value) != {"grid_search"}:  # nested spaces: not listed
            return None
        names.append(name)
        value_lists.append(values)
    return names, value_lists


def read_pruned(log_path: str | os.PathLike) -> list[dict[str, Any]]:
    """The rows `PruningSearcher` logged (none when the file does not exist)."""
    path = Path(log_path)
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def read_searcher_stats(path: str | os.PathLike) -> dict[str, Any]:
    """The counts `PruningSearcher` wrote (`SEARCHER_STATS`; empty when there is no such file: random and
    grid search)."""
    path = Path(path)
    return json.loads(path.read_text()) if path.is_file() else {}
