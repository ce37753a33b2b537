"""`plot_cost_vs_time`: a PNG of every configuration that runs, with the Pareto front marked."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from maya.tune.pareto import pareto_front

SECONDS_PER_HOUR = 3600.0


def plot_cost_vs_time(table: pd.DataFrame, path: str | Path, *, title: str = "", best_trial_id: str | None = None) -> Path:
    """Scatter of predicted cost (USD) against time to train (hours) of the `ok` rows of `table`.

    The Pareto front is drawn as a staircase with its points ringed; `best_trial_id`'s point is
    labelled. Rows that did not run are counted in the title.

    Raises:
        ImportError: matplotlib is missing (with the install command).
    """
    try:
        from matplotlib.figure import Figure  # no pyplot: the caller's backend is left alone
    except ImportError as e:
        raise ImportError("the cost-vs-time plot needs matplotlib: pip install matplotlib") from e

    ok = table[table["status"] == "ok"]
    hours = (ok["time_to_train_s"] / SECONDS_PER_HOUR).tolist()
    cost = ok["cost_usd"].tolist()
    front = pareto_front(hours, cost)
    fig = Figure(figsize=(7, 5), dpi=120)
    ax = fig.add_subplot()
    ax.scatter(hours, cost, s=18, alpha=0.6, color="tab:blue", label=f"runs ({len(ok)})")
    front_points = sorted((h, c) for h, c, f in zip(hours, cost, front) if f)
    if front_points:
        xs, ys = zip(*front_points)
        ax.step(xs, ys, where="post", color="tab:red", linewidth=1.2)
        ax.scatter(xs, ys, s=60, facecolors="none", edgecolors="tab:red", label=f"Pareto front ({len(xs)})")
    if best_trial_id is not None and best_trial_id in set(ok["trial_id"]):
        row = ok[ok["trial_id"] == best_trial_id].iloc[0]
        ax.scatter([row["time_to_train_s"] / SECONDS_PER_HOUR], [row["cost_usd"]], marker="*", s=180, color="gold",
                   edgecolors="black", zorder=5, label="best")
    others = len(table) - len(ok)
    ax.set_xlabel("predicted time to train (hours)")
    ax.set_ylabel("predicted cost to train (USD)")
    ax.set_title(f"{title}  ({others} configurations pruned, infeasible or failed)".strip())
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path)
    return path
