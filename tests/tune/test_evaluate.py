"""Evaluating configurations in-process (no Ray): real emulation, the cache, OOM and crashes."""

import logging
import threading
import time

import pytest

from maya.tune.evaluate import evaluate, steady_step_ms
from maya.tune.outcome import CacheUse, TrialStatus
from maya.tune.trace_cache import (
    PREDICTION_CODE,
    SINGLE_GPU_SIM_KEY,
    TraceCache,
    code_fingerprint,
    emulation_inputs,
    emulation_key,
    file_sha256,
)


@pytest.fixture
def study(make_study):
    return make_study(script_args=("--steps", "2", "--dim", "64", "--oom-on-batch", "8", "--fail-on-batch", "2"))


def test_steady_step_skips_the_first_iteration():
    assert steady_step_ms([9.0, 2.0, 4.0]) == 3.0
    assert steady_step_ms([9.0]) == 9.0 and steady_step_ms([]) is None


def test_ok_configuration_then_a_cache_hit(study, tmp_path):
    cache = TraceCache(tmp_path)
    first = evaluate(study, {"micro_batch": 4}, cache)
    assert first.status is TrialStatus.OK and first.cache is CacheUse.MISS, first.error
    assert first.accum == 2 and first.argv.endswith("--accum 2 --batch 4")
    # time_to_train = step time * 3,600 steps; cost = that in hours * 1 GPU * $2.
    assert first.time_to_train_s == pytest.approx(first.step_time_ms / 1000 * 3600)
    assert first.cost_usd == pytest.approx(first.time_to_train_s / 3600 * 2.0)
    assert first.objective == first.cost_usd and first.peak_reserved_bytes > 0
    assert first.breakdown_ms and first.timeline and first.top_ops
    again = evaluate(study, {"micro_batch": 4}, cache)
    assert again.cache is CacheUse.HIT and again.step_time_ms == first.step_time_ms
    assert again.evaluate_s < first.evaluate_s


def test_out_of_memory_is_infeasible_with_the_reason_and_cached(study, tmp_path):
    cache = TraceCache(tmp_path)
    oom = evaluate(study, {"micro_batch": 8}, cache)
    assert oom.status is TrialStatus.INFEASIBLE and oom.cost_usd is None
    assert oom.reason.startswith("out of memory on h200:") and "Tried to allocate 16384.00 GiB" in oom.reason
    assert evaluate(study, {"micro_batch": 8}, cache).cache is CacheUse.HIT


def test_script_failure_is_failed_with_the_traceback(study, tmp_path):
    failed = evaluate(study, {"micro_batch": 2}, TraceCache(tmp_path))
    assert failed.status is TrialStatus.FAILED
    assert "tiny_train refuses micro-batch 2" in failed.reason and "Traceback" in failed.error


def test_maya_raising_is_failed_not_raised(make_study, tmp_path):
    def check(config):
        raise KeyError("a broken check")

    failed = evaluate(make_study(check=check), {"micro_batch": 4}, TraceCache(tmp_path))
    assert failed.status is TrialStatus.FAILED and "a broken check" in failed.error


def test_memory_limit_of_the_study(make_study, tmp_path):
    tight = make_study(max_memory_fraction=1e-6)  # 1e-6 of 139 GiB = 0.14 MiB: nothing fits
    outcome = evaluate(tight, {"micro_batch": 8}, TraceCache(tmp_path))
    assert outcome.status is TrialStatus.INFEASIBLE and "max_memory_fraction=1e-06" in outcome.reason


def test_a_world_of_more_rank_classes_than_allowed_fails_fast(tmp_path):
    # Two pipeline stages of a tiny GPT are two rank classes: a bound of one fails the configuration
    # (recorded, not raised) before any stage is emulated beyond rank 0 and the probes.
    from maya.tune.study import ClusterCandidate, Study, StudyFieldError

    from conftest import ROOT

    def pipeline(max_rank_classes):
        return Study(
            script=ROOT / "examples" / "train_gpt.py", search_space={"pp": 2, "micro_batch": 1}, global_batch=2,
            script_args=("--steps", "1", "--seq", "64", "--dim", "64", "--layers", "2", "--heads", "4", "--vocab", "512"),
            train_steps=10, clusters=(ClusterCandidate(preset="dgx-h100", gpus_per_node=2),), search="grid",
            max_rank_classes=max_rank_classes,
        )

    failed = evaluate(pipeline(1), {"pp": 2, "micro_batch": 1}, TraceCache(tmp_path / "a"))
    assert failed.status is TrialStatus.FAILED and "TooManyRankClassesError: 2 rank classes over 2 ranks" in failed.reason
    again = evaluate(pipeline(1), {"pp": 2, "micro_batch": 1}, TraceCache(tmp_path / "a"))  # decided by the layout: cached
    assert again.cache is CacheUse.HIT and again.reason == failed.reason and "Traceback" in again.error
    ok = evaluate(pipeline(None), {"pp": 2, "micro_batch": 1}, TraceCache(tmp_path / "b"))
    assert ok.status is TrialStatus.OK, ok.error
    with pytest.raises(StudyFieldError, match="max_rank_classes=0 must be an integer >= 1 or None"):
        pipeline(0)


def test_a_layout_finds_its_rank_classes_once(tmp_path, caplog):
    # The rank classes are learnt by the first emulation of a layout (tp 2 x pp 2 x FSDP 2 on 8 GPUs:
    # one class per pipeline stage) and passed to the next configuration of that layout, at another
    # micro-batch size, which emulates the two representatives only, the last stage first.
    from maya.tune.evaluate import emulate_with_log
    from maya.tune.study import ClusterCandidate, Study

    from conftest import ROOT

    given, emulated = [], []

    def emulate(*args, **kwargs):  # the real emulation; what it was given, and its ranks in their order
        given.append((kwargs["variant_families"], kwargs["rank_classes"]))
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="maya.world.world_emulation"):
            summary = emulate_with_log(*args, **kwargs)
        emulated.append([int(r.getMessage().split()[1]) for r in caplog.records if "emulated in" in r.getMessage()])
        return summary

    study = Study(
        script=ROOT / "examples" / "train_gpt.py", global_batch=8, train_steps=10, search="grid",
        search_space={"tp": 2, "pp": 2, "dp_mode": "fsdp", "micro_batch": 1},
        script_args=("--steps", "1", "--seq", "32", "--dim", "64", "--layers", "2", "--heads", "4", "--vocab", "512"),
        clusters=(ClusterCandidate(preset="dgx-h100", gpus_per_node=8),), extrapolate_accum=False,
    )
    cache = TraceCache(tmp_path)
    first = evaluate(study, {"tp": 2, "pp": 2, "dp_mode": "fsdp", "micro_batch": 1}, cache, emulate=emulate)
    second = evaluate(study, {"tp": 2, "pp": 2, "dp_mode": "fsdp", "micro_batch": 2}, cache, emulate=emulate)
    assert first.status is TrialStatus.OK and second.status is TrialStatus.OK, (first.error, second.error)
    assert given[0] == (None, None)
    families, classes = given[1]
    assert len(families) == 1 and classes == {r: 0 if r < 4 else 4 for r in range(8)}  # the pipeline's family
    assert emulated == [[0, 4, 2, 1], [4, 0]]  # rank 0, probes 4 (pp), 2 (dp), 1 (tp); then the stages only
    assert len(list(tmp_path.glob("classes-*.json"))) == 1


def test_pruned_configuration_is_not_emulated(study, tmp_path):
    outcome = evaluate(study, {"micro_batch": 3}, TraceCache(tmp_path))
    assert outcome.status is TrialStatus.PRUNED and "global_batch=8 is not a multiple" in outcome.reason
    assert outcome.cache is None and not any(tmp_path.iterdir())


def test_a_second_trial_with_the_same_key_waits_and_hits(study, tmp_path):
    # While one trial holds the key's lock (emulating), another with the same key blocks, then
    # finds the figures: one emulation for both.
    cache = TraceCache(tmp_path)
    argv = ("--steps", "2", "--dim", "64", "--oom-on-batch", "8", "--fail-on-batch", "2", "--accum", "2", "--batch", "4")
    key = emulation_key(emulation_inputs(script_sha256=file_sha256(study.script), argv=argv, gpu="h200",
                                         tp=1, pp=1, dp=1, dp_mode=None))
    results = []
    with cache.lock(key):
        waiter = threading.Thread(target=lambda: results.append(evaluate(study, {"micro_batch": 4}, cache)))
        waiter.start()
        time.sleep(0.5)
        assert not results  # blocked on the lock
        cache.write_figures(key, f"{SINGLE_GPU_SIM_KEY}-code-{code_fingerprint(PREDICTION_CODE)[:12]}", {
            "step_time_ms": 5.0, "peak_allocated_bytes": 1, "peak_reserved_bytes": 2, "breakdown_ms": {},
            "top_ops": [], "timeline": None, "iteration_ms": [6.0, 5.0], "trace_dir": None}, {})
    waiter.join(timeout=60)
    assert results[0].cache is CacheUse.HIT and results[0].step_time_ms == 5.0


def test_error_summary_finds_the_exception_line():
    from maya.tune.evaluate import error_summary

    wrapped = (
        "[rank 0] Traceback (most recent call last):\n  File \"x.py\", line 1\n"
        "torch.OutOfMemoryError: CUDA out of memory (emulated by Maya). Tried to allocate 1.00 GiB.\n\n"
        "The above exception was the direct cause of the following exception:\n\nTraceback (most recent call last):\n"
        "RuntimeError: \n            [Stage 0] failed to run forward:\n            kwargs: {}\n"
    )
    assert error_summary(wrapped, "OutOfMemoryError").startswith("torch.OutOfMemoryError: CUDA out of memory")
    assert error_summary(wrapped) == "RuntimeError: [Stage 0] failed to run forward: kwargs: {}"
    assert error_summary("exit without an exception line\n") == "exit without an exception line"
    assert error_summary(None) == ""


def test_host_profiles_price_the_clusters_of_their_gpu_with_their_own_cache_entries(make_study, tmp_path,
                                                                                    slow_host_profile):
    # A study whose H200 machines have a host three times slower than the shipped figures: the same
    # trace is predicted longer, and the two studies' figures sit under two simulation keys.
    from maya.tune.study import resolve_host_profiles

    slower = slow_host_profile
    cache = TraceCache(tmp_path)
    shipped = evaluate(make_study(), {"micro_batch": 4}, cache)
    slow = evaluate(make_study(host_profiles=resolve_host_profiles({"h200": slower})), {"micro_batch": 4}, cache)
    assert shipped.status is TrialStatus.OK and slow.status is TrialStatus.OK, (shipped.error, slow.error)
    assert slow.cache is CacheUse.RESIMULATED  # the first study's trace, re-simulated with the study's figures
    assert slow.step_time_ms > 1.5 * shipped.step_time_ms
    again = evaluate(make_study(), {"micro_batch": 4}, cache)
    assert again.cache is CacheUse.HIT and again.step_time_ms == shipped.step_time_ms
    # Only the GPU named is affected: an A100 profile leaves these H200 clusters as shipped.
    other = evaluate(make_study(host_profiles=resolve_host_profiles({"a100": slower})), {"micro_batch": 4}, cache)
    assert other.cache is CacheUse.HIT and other.step_time_ms == shipped.step_time_ms
