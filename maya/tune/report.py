"""`write_report`: a study's result files.

    OUT/results.parquet     every trial (config, predicted step time, cost, peak memory, status, reason)
    OUT/results.csv         the same table
    OUT/top_k.csv           the k best configurations that run
    OUT/pareto.csv          the time/cost Pareto front
    OUT/best.json           the best configuration with its figures, breakdown and top ops
    OUT/best_timeline.json  its Perfetto timeline (open in https://ui.perfetto.dev)
    OUT/cost_vs_time.png    cost against time of every configuration that runs, Pareto front marked
    OUT/study.json          what `read_report` needs beyond them: objective, dimensions, top_k, how the study ended
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from maya.tune.plot import plot_cost_vs_time
from maya.tune.results import DETAIL_KEYS, TuneResults

STUDY_FILE = "study.json"


def write_report(results: TuneResults, out_dir: str | Path, *, top_k: int, timeline: bytes | None, title: str = "") -> dict[str, Path]:
    """Write the files listed in the module docstring; returns their paths by name."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    table = _storable(results.table)
    files = {"results_parquet": out / "results.parquet", "results_csv": out / "results.csv",
             "top_k_csv": out / "top_k.csv", "pareto_csv": out / "pareto.csv"}
    table.to_parquet(files["results_parquet"], index=False)
    table.to_csv(files["results_csv"], index=False)
    _storable(results.top(top_k)).drop(columns=["error"]).to_csv(files["top_k_csv"], index=False)
    _storable(results.pareto()).drop(columns=["error"]).to_csv(files["pareto_csv"], index=False)
    best = results.best
    if best is not None:
        files["best_json"] = out / "best.json"
        files["best_json"].write_text(json.dumps(_jsonable({**best, "config": results.best_config}), indent=2) + "\n")
        if timeline is not None:
            files["timeline"] = out / "best_timeline.json"
            files["timeline"].write_bytes(timeline)
        files["plot"] = plot_cost_vs_time(results.table, out / "cost_vs_time.png", title=title, best_trial_id=best["trial_id"])
    return files


def _storable(table: pd.DataFrame) -> pd.DataFrame:
    """Columns of mixed Python types (a choice of 1 and "auto") as strings, so Parquet takes them."""
    table = table.copy()
    for name in table.columns:
        if table[name].dtype == object:
            kinds = {type(v) for v in table[name] if v is not None and not (isinstance(v, float) and math.isnan(v))}
            if len(kinds) > 1 or kinds - {str, int, float, bool}:
                table[name] = table[name].map(lambda v: None if v is None else str(v))
    return table


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_study_record(results: TuneResults, out_dir: str | Path, *, top_k: int) -> Path:
    """Write `STUDY_FILE`: the objective, dimensions and `top_k` of the study that made `results`, how it
    ended (unfinished trials, the searcher's counts) and its files by name, relative to `out_dir`."""
    out = Path(out_dir)
    files = {name: str(Path(path).resolve().relative_to(out.resolve())) for name, path in results.files.items()}
    record = {"objective": results.objective, "dimensions": list(results.dimensions), "top_k": top_k,
              "unfinished_trials": results.unfinished_trials, "searcher": results.searcher, "files": files}
    path = out / STUDY_FILE
    path.write_text(json.dumps(_jsonable(record), indent=2) + "\n")
    return path


def read_report(out_dir: str | Path) -> tuple[TuneResults, int]:
    """The results of the study that wrote `out_dir` (`maya tune --out`), as `run_study` returned them,
    and its `top_k`.

    Raises:
        FileNotFoundError: `out_dir` holds no finished study (no `STUDY_FILE` or results.parquet).
    """
    out = Path(out_dir).resolve()
    record_path, table_path = out / STUDY_FILE, out / "results.parquet"
    if not table_path.is_file():
        raise FileNotFoundError(f"{out_dir} holds no finished `maya tune` study (no results.parquet)")
    if not record_path.is_file():
        raise FileNotFoundError(f"{out_dir} has a study's results but no {STUDY_FILE}: a Maya before `maya report` "
                                "wrote it (its results.csv and top_k.csv hold the ranking)")
    record = json.loads(record_path.read_text())
    best_path = out / "best.json"
    best = json.loads(best_path.read_text()) if best_path.is_file() else {}
    details = {best["trial_id"]: {k: best[k] for k in DETAIL_KEYS if k in best}} if best else {}
    results = TuneResults(table=pd.read_parquet(table_path), objective=record["objective"],
                          dimensions=tuple(record["dimensions"]), details=details,
                          files={name: out / rel for name, rel in record["files"].items()},
                          unfinished_trials=record["unfinished_trials"], searcher=record["searcher"])
    return results, record["top_k"]
