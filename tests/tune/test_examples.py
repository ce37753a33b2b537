"""examples/tune_*.py run end to end in a tiny mode: the example's space, check and script, tiny sizes."""

from dataclasses import replace

import pytest

from maya.tune import load_study, run_study
from maya.tune.study import ClusterCandidate

from conftest import ROOT

TINY_GPT = ("--steps", "1", "--seq", "64", "--dim", "64", "--layers", "2", "--heads", "4", "--vocab", "512")


def test_tune_gpt_tiny(ray_local, tmp_path):
    study = replace(load_study(ROOT / "examples" / "tune_gpt.py"), script_args=TINY_GPT)
    results = run_study(study, tmp_path)
    assert len(results.table) == 12 and (results.table["status"] == "ok").all()
    assert results.best_config["micro_batch"] in (16, 32, 64) and (tmp_path / "cost_vs_time.png").exists()


def test_tune_llama_tiny_two_ranks(ray_local, tmp_path):
    # One two-rank configuration of the Llama example's space (tp 2, FSDP) on two GPUs of an H100 node.
    study = load_study(ROOT / "examples" / "tune_llama.py")
    space = {**study.search_space, "tp": 2, "pp": 1, "dp_mode": "fsdp", "micro_batch": 1, "checkpoint": "none",
             "pp_schedule": "1f1b"}
    study = replace(
        study, script_args=("--steps", "1", "--seq", "64", "--dim", "64", "--layers", "2", "--heads", "8", "--vocab", "512"),
        search_space=space, global_batch=2, search="grid", train_tokens=2 * 64 * 1000, tokens_per_sample=64,
        clusters=(ClusterCandidate(preset="dgx-h100", gpus_per_node=2, label="h100-on-demand", price_per_gpu_hour_usd=3.0),),
    )
    results = run_study(study, tmp_path)
    row = results.table.iloc[0]
    assert row["status"] == "ok", row["error"]
    assert (row["world_size"], row["dp"], row["accum"]) == (2, 1, 2)
    assert row["cost_usd"] == pytest.approx(row["time_to_train_s"] / 3600 * 2 * 3.0)
