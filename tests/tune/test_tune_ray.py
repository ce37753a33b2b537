"""`maya.tune` on a real local Ray: every trial outcome, the result files, HyperOpt trying each configuration once with cache hits."""

import json

import pandas as pd
import pytest
from conftest import TINY_SCRIPT

import maya
from maya.tune.results import TuneResults

CLUSTER = {"preset": "dgx-h200", "gpus_per_node": 1, "price_per_gpu_hour_usd": 2.0}


def test_grid_study_reports_every_outcome_and_writes_the_files(ray_local, tmp_path):
    from ray import tune

    # Global batch 8: micro-batch 3 is pruned; 2 raises in the script; 8 runs out of memory; 1
    # kills its trial's process; 4 runs.
    results = maya.tune(
        {"micro_batch": tune.choice([1, 2, 3, 4, 8])},
        script=TINY_SCRIPT,
        script_args=["--steps", "2", "--dim", "64", "--fail-on-batch", "2", "--oom-on-batch", "8", "--exit-on-batch", "1"],
        global_batch=8, train_steps=3600, clusters=[CLUSTER], search="grid", out_dir=tmp_path, top_k=3,
    )
    assert isinstance(results, TuneResults)
    status = dict(zip(results.table["micro_batch"], results.table["status"]))
    assert status == {4: "ok", 8: "infeasible", 2: "failed", 1: "failed", 3: "pruned"}
    by_batch = results.table.set_index("micro_batch")
    assert "out of memory on h200" in by_batch.loc[8, "reason"]
    assert "tiny_train refuses micro-batch 2" in by_batch.loc[2, "error"] and "Traceback" in by_batch.loc[2, "error"]
    assert by_batch.loc[1, "reason"]  # the crashed process's error, as Ray Tune saw it
    assert "not a multiple" in by_batch.loc[3, "reason"] and pd.isna(by_batch.loc[3, "cache"])

    best = results.best
    assert best["micro_batch"] == 4 and best["accum"] == 2 and best["status"] == "ok"
    assert best["cost_usd"] == pytest.approx(best["step_time_ms"] / 1000 * 3600 / 3600 * 1 * 2.0)
    assert set(best["breakdown_ms"]) >= {"compute_ms", "host_bound_ms"} and best["top_ops"]
    assert results.best_config == {"micro_batch": 4, "cluster": "dgx-h200", "nodes": 1, "dp": 1, "accum": 2, "world_size": 1}

    files = results.files
    parquet, csv = pd.read_parquet(files["results_parquet"]), pd.read_csv(files["results_csv"])
    assert len(parquet) == len(csv) == 5
    assert {"micro_batch", "step_time_ms", "cost_usd", "peak_reserved_bytes", "status", "reason"} <= set(parquet.columns)
    written = json.loads(files["best_json"].read_text())
    assert written["config"]["micro_batch"] == 4 and written["breakdown_ms"] == best["breakdown_ms"]
    assert "traceEvents" in json.loads(files["timeline"].read_text())
    assert files["plot"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(pd.read_csv(files["top_k_csv"])) == 1 and len(pd.read_csv(files["pareto_csv"])) == 1


def test_hyperopt_tries_each_configuration_once_and_reuses_emulations(ray_local, tmp_path):
    from ray import tune

    # 4 micro-batches x 2 prices: 8 configurations, 12 samples asked for. Each configuration is a
    # trial once; the second price of a micro-batch reuses its emulation (a cache hit). Without
    # micro-batch extrapolation: two concurrent trials of an extrapolated configuration can each
    # emulate one of its two points, and each then counts as a miss.
    lines = []
    pricier = {**CLUSTER, "price_per_gpu_hour_usd": 3.0, "label": "pricier"}
    results = maya.tune(
        {"micro_batch": tune.choice([1, 2, 4, 8]), "precision": "bf16"},
        script=TINY_SCRIPT, script_args=["--steps", "2", "--dim", "32", "--oom-on-batch", "8"],
        global_batch=8, train_steps=100, clusters=[CLUSTER, pricier], search="hyperopt", num_samples=12, seed=3,
        objective="time", out_dir=tmp_path, progress=lines.append, extrapolate_accum=False,
    )
    table = results.table
    assert len(table) == 8 and set(table["status"]) <= {"ok", "infeasible"}
    assert not table[["micro_batch", "cluster"]].duplicated().any()
    assert results.searcher["space_exhausted"] and results.searcher["proposed"] == 8
    assert results.unfinished_trials == 0
    assert results.cache_hit_rate >= 0.5
    assert (table["cache"] == "miss").sum() <= 4
    ok = table[table["status"] == "ok"]
    assert table["objective"].iloc[0] == ok["time_to_train_s"].min()  # time objective, best first
    assert table.loc[table["micro_batch"] == 8, "status"].eq("infeasible").all()
    assert len(lines) == 8 and any("(hit)" in line for line in lines)


def test_hyperopt_prunes_inside_the_searcher(ray_local, tmp_path):
    from ray import tune

    # Global batch 8: micro-batches 3, 5, 6 and 7 are pruned by the searcher and never become Ray
    # Tune trials; they are rows of the results (with their reason) and count towards num_samples.
    lines = []
    results = maya.tune(
        {"micro_batch": tune.choice([2, 3, 4, 5, 6, 7]), "dim": tune.choice([32, 48])},
        script=TINY_SCRIPT, script_args=["--steps", "2"],
        global_batch=8, train_steps=100, clusters=[CLUSTER], search="hyperopt", num_samples=12, seed=1,
        out_dir=tmp_path, progress=lines.append,
    )
    table = results.table
    pruned = table[table["status"] == "pruned"]
    assert len(table) == 12 and len(pruned) >= 3
    assert set(pruned["micro_batch"]) <= {3, 5, 6, 7} and pruned["reason"].str.contains("not a multiple").all()
    assert set(table.loc[table["status"] != "pruned", "micro_batch"]) <= {2, 4}
    trial_dirs = [p for p in (tmp_path / "tune").iterdir() if p.is_dir()]
    assert len(trial_dirs) == len(table) - len(pruned)  # only runnable configurations ran as trials
    assert len(lines) == 12 and lines[-1].startswith("[12/12] ") and sum(" pruned " in line for line in lines) == len(pruned)
    assert len(pd.read_parquet(results.files["results_parquet"])) == 12
