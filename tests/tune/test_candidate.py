"""Resolving a sampled configuration: degrees, accumulation, argv, and pruning with reasons."""

import pytest

from maya.tune.candidate import PrunedConfig, resolve_candidate
from maya.tune.study import ClusterCandidate

H100 = ClusterCandidate(preset="dgx-h100", nodes=(1, 2, 4), price_per_gpu_hour_usd=2.0)


@pytest.fixture
def study_of(make_study):
    def build(**fields):
        return _study(make_study, **fields)

    return build


def _study(make_study, **fields):
    from ray import tune

    return make_study(
        search_space={"micro_batch": tune.choice([1, 2, 3]), "tp": tune.choice([1, 2, 4, 8, 16]), "pp": tune.choice([1, 2])},
        global_batch=64, clusters=(H100,), **fields,
    )


def test_degrees_and_accumulation_follow_the_world_size(study_of):
    # 2 nodes x 8 GPUs = 16; tp 4 * pp 2 = 8 -> dp 2; 64 / (2 * 2) = 16 micro-batches per step.
    c = resolve_candidate(study_of(), {"micro_batch": 2, "tp": 4, "pp": 2, "nodes": 2, "cluster": "dgx-h100"})
    assert (c.world_size, c.dp, c.accum) == (16, 2, 16)
    assert c.cluster.price_per_gpu_hour_usd == 2.0 and c.cluster.nodes == 2
    # Fixed flags first, then each searched value under its flag, in key order.
    assert c.argv == ("--steps", "2", "--dim", "64", "--accum", "16", "--batch", "2", "--pp", "2", "--tp", "4")


@pytest.mark.parametrize(
    ("config", "field", "words"),
    [
        ({"micro_batch": 3, "nodes": 1}, "global_batch", "global_batch=64 is not a multiple of micro_batch=3 * dp=8 = 24"),
        ({"micro_batch": 1, "tp": 16, "nodes": 2}, "tp_within_node", "tp=16 > gpus_per_node=8"),
        ({"micro_batch": 1, "nodes": 3}, "clusters", "offers nodes [1, 2, 4], not 3"),
    ],
)
def test_pruned_with_the_rule_and_the_numbers(study_of, config, field, words):
    with pytest.raises(PrunedConfig) as e:
        resolve_candidate(study_of(), {"cluster": "dgx-h100", **config})
    assert e.value.field == field and words in e.value.reason


def test_max_gpus_and_divisibility(study_of):
    with pytest.raises(PrunedConfig, match=r"world_size=32 .* > max_gpus=16"):
        resolve_candidate(study_of(max_gpus=16), {"micro_batch": 1, "nodes": 4})
    with pytest.raises(PrunedConfig, match="tp=8 \\* pp=2 = 16 does not divide world_size=8"):
        resolve_candidate(study_of(), {"micro_batch": 1, "tp": 8, "pp": 2, "nodes": 1})


def test_the_studys_own_check_sees_derived_degrees(study_of):
    seen = {}

    def check(config):
        seen.update(config)
        return "heads=12 not divisible by tp" if 12 % config["tp"] else None

    study = study_of(check=check)
    resolve_candidate(study, {"micro_batch": 1, "tp": 4, "nodes": 1})
    assert seen["dp"] == 2 and seen["accum"] == 32 and seen["world_size"] == 8
    with pytest.raises(PrunedConfig, match="heads=12") as e:
        resolve_candidate(study, {"micro_batch": 1, "tp": 8, "nodes": 1})
    assert e.value.field == "check"


def test_flags_map_layout_dimensions_and_booleans(make_study):
    from ray import tune

    study = make_study(search_space={"micro_batch": tune.choice([4]), "compile": tune.choice([True, False]), "lr_scale": 2},
                       flags={"micro_batch": "--micro-batch", "accum": None})
    on = resolve_candidate(study, {"micro_batch": 8, "compile": True, "lr_scale": 2})
    assert on.argv == ("--steps", "2", "--dim", "64", "--compile", "--lr-scale", "2", "--micro-batch", "8")
    off = resolve_candidate(study, {"micro_batch": 8, "compile": False, "lr_scale": 2})
    assert "--compile" not in off.argv
    # Without an accumulation flag, a configuration needing accum > 1 cannot run.
    with pytest.raises(PrunedConfig, match="no accumulation flag"):
        resolve_candidate(study, {"micro_batch": 4})


def test_fewer_gpus_per_node_than_the_preset():
    spec = ClusterCandidate(preset="dgx-h200", gpus_per_node=1).spec(1)
    assert (spec.world_size, spec.gpus_per_node, spec.nvlink_domain_size) == (1, 1, 1)
    two = ClusterCandidate(preset="dgx-h200", gpus_per_node=4, nodes=(2,)).spec(2)
    assert (two.world_size, two.nvlink_domain_size) == (8, 4)


def test_trial_resources_are_the_studys(make_study):
    from maya.tune.trial_resources import max_concurrent_trials, trial_resources

    # Single-GPU and multi-rank trials alike emulate in their own process on cpus_per_trial CPUs.
    assert trial_resources(make_study()) == {"cpu": 1.0} and max_concurrent_trials(make_study()) is None
    multi = make_study(clusters=(H100,), global_batch=64, cpus_per_trial=2.0, max_concurrent_trials=5)
    assert trial_resources(multi) == {"cpu": 2.0} and max_concurrent_trials(multi) == 5