"""`TuneResults`: every trial of a study as a table, the best configuration and the Pareto front."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from maya.tune.cost import INFEASIBLE_OBJECTIVE
from maya.tune.pareto import pareto_front

FIGURE_COLUMNS: tuple[str, ...] = (
    "trial_id", "status", "objective", "step_time_ms", "time_to_train_s", "cost_usd",
    "peak_allocated_bytes", "peak_reserved_bytes",
)
LAUNCH_COLUMNS: tuple[str, ...] = (
    "world_size", "gpus_per_node", "dp", "accum", "accum_emulated", "depth_emulated", "gpu", "price_per_gpu_hour_usd", "cache", "reason",
    "evaluate_s", "argv", "error", "timeline", "node_id",
)
DETAIL_KEYS = ("breakdown_ms", "top_ops")
"""Per-trial figures kept out of the table: the time breakdown and the top ops."""


@dataclass(frozen=True, kw_only=True, slots=True)
class TuneResults:
    """What a study found: one row per trial, best first."""

    table: pd.DataFrame
    """Every trial: figures, the searched dimensions, launch, status and reason; ok rows by objective first."""
    objective: str
    """What the study minimised: `cost` (USD) or `time` (seconds)."""
    dimensions: tuple[str, ...]
    """The searched dimensions (columns of `table`), `cluster` and `nodes` included."""
    details: dict[str, dict] = field(default_factory=dict)
    """Per trial id of an ok trial: its time breakdown and top ops."""
    files: dict[str, Path] = field(default_factory=dict)
    """Files written for the study (`results_parquet`, `results_csv`, `best_json`, `timeline`, `plot`, ...)."""
    unfinished_trials: int = 0
    """Trials of the study that have not finished (it was interrupted: resume it to run them)."""
    searcher: dict[str, Any] = field(default_factory=dict)
    """HyperOpt studies: the searcher's counts (`maya.tune.pruning_searcher.SEARCHER_STATS`): proposals,
    repeats answered without a trial, configurations drawn after repeats, whether the space ran out."""

    @property
    def best(self) -> dict | None:
        """The best configuration's row plus its breakdown, or None when nothing ran."""
        ok = self.table[self.table["status"] == "ok"]
        if ok.empty:
            return None
        row = ok.iloc[0].to_dict()
        return {**row, **self.details.get(row["trial_id"], {})}

    @property
    def best_config(self) -> dict | None:
        """The searched values of the best configuration (with the derived dp and accum)."""
        best = self.best
        if best is None:
            return None
        return {k: best[k] for k in (*self.dimensions, "dp", "accum", "world_size") if k in best}

    def top(self, k: int = 10) -> pd.DataFrame:
        """The k best configurations that run."""
        return self.table[self.table["status"] == "ok"].head(k)

    def pareto(self) -> pd.DataFrame:
        """The configurations on the time/cost Pareto front, fastest first."""
        ok = self.table[self.table["status"] == "ok"]
        mask = pd.Series(pareto_front(ok["time_to_train_s"].tolist(), ok["cost_usd"].tolist()), index=ok.index, dtype=bool)
        return ok[mask].sort_values("time_to_train_s")

    @property
    def counts(self) -> dict[str, int]:
        """Trials per status."""
        return {str(k): int(v) for k, v in self.table["status"].value_counts().items()}

    @property
    def cache_hit_rate(self) -> float | None:
        """Share of evaluated (not pruned) trials that did not emulate: cache hits, re-simulations and
        configurations ruled out by memory dominance."""
        used = self.table["cache"].dropna()
        return float((used != "miss").mean()) if len(used) else None


def results_table(rows: Iterable[dict], dimensions: Sequence[str]) -> pd.DataFrame:
    """The results table from per-trial dicts (config values and reported metrics merged).

    Rows are ordered ok first by objective, then infeasible, failed and pruned.
    """
    table = pd.DataFrame(list(rows))
    for name in (*FIGURE_COLUMNS, *LAUNCH_COLUMNS):
        if name not in table:
            table[name] = None
    dims = [d for d in dimensions if d in table]
    extra = [c for c in table.columns if c not in (*FIGURE_COLUMNS, *dims, *LAUNCH_COLUMNS, *DETAIL_KEYS)]
    table = table[[*FIGURE_COLUMNS, *dims, *LAUNCH_COLUMNS, *extra]]
    rank = {"ok": 0, "infeasible": 1, "failed": 2, "pruned": 3}
    table = table.assign(_rank=table["status"].map(rank).fillna(4), _objective=table["objective"].fillna(INFEASIBLE_OBJECTIVE))
    table = table.sort_values(["_rank", "_objective", "trial_id"], kind="stable").drop(columns=["_rank", "_objective"])
    return table.reset_index(drop=True)


def row_from_trial(trial_id: str, config: dict[str, Any], metrics: dict[str, Any], error: BaseException | str | None) -> dict:
    """One table row: the configuration's values, then what the trial reported (or its crash)."""
    row: dict[str, Any] = {"trial_id": trial_id, **config}
    reported = {k: v for k, v in metrics.items() if k in (*FIGURE_COLUMNS, *LAUNCH_COLUMNS, *DETAIL_KEYS)}
    if "status" in reported:
        row.update(reported)
        row["trial_id"] = trial_id
    else:  # the trial process died before it reported
        text = str(error) if error is not None else "the trial ended without a result"
        row.update(status="failed", objective=INFEASIBLE_OBJECTIVE, reason=text.strip().splitlines()[0] if text.strip() else text,
                   error=text)
    return row
