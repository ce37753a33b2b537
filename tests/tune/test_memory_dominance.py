"""Memory dominance: configurations needing at least the memory of one found over memory are not emulated."""

from __future__ import annotations

import pytest

from maya.tune.candidate import resolve_candidate
from maya.tune.evaluate import evaluate
from maya.tune.memory_dominance import dominating, memory_file, record
from maya.tune.outcome import CacheUse, TrialStatus
from maya.tune.study import ClusterCandidate, StudyFieldError
from maya.tune.trace_cache import TraceCache


def _study(make_study, **fields):
    from ray import tune

    return make_study(
        script_args=("--steps", "2", "--dim", "64", "--oom-on-batch", "4"),
        search_space={"micro_batch": tune.choice([2, 4, 8]), "precision": tune.choice(["fp32", "bf16"])},
        **fields,
    )


def test_a_larger_micro_batch_is_infeasible_without_emulation(make_study, tmp_path):
    # The script runs out of memory at micro-batch 4 only, so a verdict for 8 can only come from dominance.
    study, cache = _study(make_study), TraceCache(tmp_path)
    over = evaluate(study, {"micro_batch": 4, "precision": "fp32"}, cache)
    assert over.status is TrialStatus.INFEASIBLE and over.cache is CacheUse.MISS
    dominated = evaluate(study, {"micro_batch": 8, "precision": "fp32"}, cache)
    assert dominated.status is TrialStatus.INFEASIBLE and dominated.cache is CacheUse.DOMINATED
    assert dominated.reason.startswith("needs at least the memory per GPU of micro_batch=4 precision=fp32 dp=1 on h200")
    assert "out of memory on h200" in dominated.reason and dominated.accum == 1 and dominated.gpu == "h200"
    # Another value of a dimension with no memory order, and a smaller micro-batch, are emulated.
    assert evaluate(study, {"micro_batch": 8, "precision": "bf16"}, cache).status is TrialStatus.OK
    assert evaluate(study, {"micro_batch": 2, "precision": "fp32"}, cache).status is TrialStatus.OK
    assert len(memory_file(study, tmp_path).read_text().splitlines()) == 1


def test_memory_order_and_turning_dominance_off(make_study, tmp_path):
    ordered = _study(make_study, memory_order={"precision": ["bf16", "fp32"]})
    cache = TraceCache(tmp_path)
    assert evaluate(ordered, {"micro_batch": 4, "precision": "bf16"}, cache).cache is CacheUse.MISS
    assert evaluate(ordered, {"micro_batch": 8, "precision": "fp32"}, cache).cache is CacheUse.DOMINATED
    assert evaluate(ordered, {"micro_batch": 8, "precision": "bf16"}, cache).cache is CacheUse.DOMINATED
    off = _study(make_study, memory_order={"precision": ["bf16", "fp32"]}, memory_dominance=False)
    ran = evaluate(off, {"micro_batch": 8, "precision": "fp32"}, TraceCache(tmp_path / "off"))
    assert ran.status is TrialStatus.OK and ran.cache is CacheUse.MISS


def test_data_parallel_degree_and_gpu_memory(make_study, tmp_path):
    # dgx-h200 (141 GB) and dgx-h100 (80 GB) nodes of 8 GPUs: dp = 8 * nodes, global batch 64.
    from ray import tune

    study = make_study(
        search_space={"micro_batch": tune.choice([2, 4]), "cluster": tune.choice(["h200", "h100"]), "nodes": tune.choice([1, 2])},
        global_batch=64,
        clusters=(ClusterCandidate(preset="dgx-h200", nodes=(1, 2), price_per_gpu_hour_usd=3.0, label="h200"),
                  ClusterCandidate(preset="dgx-h100", nodes=(1, 2), price_per_gpu_hour_usd=2.0, label="h100")),
    )

    def candidate(mb, cluster, nodes):
        return resolve_candidate(study, {"micro_batch": mb, "cluster": cluster, "nodes": nodes})

    here, other = memory_file(study, tmp_path), memory_file(study, tmp_path / "other")
    record(study, candidate(2, "h200", 2), "too big", here)  # dp = 16 on 141 GB
    assert dominating(study, candidate(2, "h200", 1), here)  # dp 8: larger shards, more samples per rank
    assert dominating(study, candidate(4, "h100", 2), here)  # the same dp on a smaller GPU
    assert dominating(study, candidate(2, "h200", 2), here) is None  # itself: the trace cache answers
    record(study, candidate(4, "h100", 1), "too big", other)  # dp = 8 on 80 GB
    assert dominating(study, candidate(4, "h200", 1), other) is None  # more memory per GPU
    assert dominating(study, candidate(4, "h100", 2), other) is None  # dp 16: smaller shards
    assert dominating(study, candidate(2, "h100", 1), other) is None  # smaller micro-batch


@pytest.mark.parametrize("order, reason", [
    ({"nodes": "increasing"}, "'nodes' is not a searched dimension"),
    ({"precision": "upward"}, "'upward' is not 'increasing'"),
    ({"precision": ["bf16"]}, "a list of two or more values"),
    (["precision"], "must map searched dimensions"),
])
def test_a_memory_order_that_cannot_work_is_refused(make_study, order, reason):
    with pytest.raises(StudyFieldError, match=reason) as e:
        _study(make_study, memory_order=order)
    assert e.value.field == "memory_order"


def test_the_schedule_of_a_configuration_without_a_pipeline_is_ignored(make_study, tmp_path):
    from ray import tune

    study = make_study(search_space={"micro_batch": tune.choice([2, 4]), "pp_schedule": tune.choice(["1f1b", "interleaved"])})
    record(study, resolve_candidate(study, {"micro_batch": 2, "pp_schedule": "1f1b"}), "too big", memory_file(study, tmp_path))
    assert dominating(study, resolve_candidate(study, {"micro_batch": 4, "pp_schedule": "interleaved"}), memory_file(study, tmp_path))
    assert '"pp_schedule"' not in memory_file(study, tmp_path).read_text()


def test_another_emulators_records_are_not_read(make_study, tmp_path, monkeypatch):
    # What fits is the emulator's verdict: records made by other emulator code live in another file.
    import maya.tune.memory_dominance as dominance

    study = _study(make_study)
    here = memory_file(study, tmp_path)
    assert memory_file(study, tmp_path) == here
    monkeypatch.setattr(dominance, "EMULATION_CODE", ("hardware",))
    assert memory_file(study, tmp_path) != here
