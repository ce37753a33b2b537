"""Micro-batch extrapolation: the counts, the affine figures by hand, and a full emulation as the reference."""

from dataclasses import replace

import pytest

from maya.tune.accum_extrapolation import extrapolate_figures, extrapolation_counts
from maya.tune.evaluate import evaluate
from maya.tune.outcome import CacheUse, TrialStatus
from maya.tune.study import ClusterCandidate, Study
from maya.tune.trace_cache import TraceCache

from conftest import ROOT

TINY_GPT = ("--steps", "1", "--seq", "64", "--dim", "64", "--layers", "4", "--heads", "4", "--vocab", "512",
            "--precision", "bf16")


def test_counts_are_emulated_only_when_cheaper_than_the_configuration():
    assert extrapolation_counts(5, 1) is None  # 2 + 3 micro-batches cost as much as 5
    assert extrapolation_counts(6, 1) == (2, 3)
    assert extrapolation_counts(20, 4) is None
    assert extrapolation_counts(21, 4) == (8, 12)  # schedule unknown: multiples of pp, past the warm-up
    assert extrapolation_counts(512, 8, "interleaved") == (16, 24)
    assert extrapolation_counts(512, 8, "1f1b") == (9, 10) and extrapolation_counts(20, 8, "gpipe") == (9, 10)
    assert extrapolation_counts(19, 8, "1f1b") is None


def test_figures_are_affine_in_the_count():
    def figures(step_ms, allocated, compute_ms):
        return {"iteration_ms": [step_ms], "step_time_ms": step_ms, "peak_allocated_bytes": allocated,
                "peak_reserved_bytes": 2 * allocated, "breakdown_ms": {"compute_ms": compute_ms, "idle_ms": 1.0},
                "top_ops": ["small"], "timeline": "t.json", "trace_dir": "d", "emulate_s": 9.0}

    # 4 micro-batches: 100 ms, 8 micro-batches: 160 ms, so 15 ms each on top of 40 ms; 32 -> 520 ms.
    derived = extrapolate_figures({8: figures(160.0, 3000, 120.0), 4: figures(100.0, 2000, 60.0)}, 32)
    assert derived["step_time_ms"] == pytest.approx(520.0) and derived["iteration_ms"] == [pytest.approx(520.0)]
    assert derived["peak_allocated_bytes"] == 2000 + 250 * 28 and derived["peak_reserved_bytes"] == 2 * 9000
    assert derived["breakdown_ms"] == {"compute_ms": pytest.approx(480.0), "idle_ms": pytest.approx(1.0)}
    assert derived["accum_emulated"] == [4, 8] and "emulate_s" not in derived and derived["timeline"] == "t.json"


def test_peak_is_the_larger_of_the_extrapolated_body_and_tail():
    def figures(body, tail):
        return {"iteration_ms": [], "step_time_ms": None, "peak_allocated_bytes": max(body, tail),
                "peak_reserved_bytes": 2 * max(body, tail), "memory_rank": 1,
                "memory_segments": {"0": [10**9, 0], "1": [body, tail]}}

    # Rank 1: the body grows 5 per micro-batch and peaks at 4 and 8; the tail grows 10 and wins at 32
    # (90 + 24 * 10 = 330 > 120 + 24 * 5 = 240). Rank 0 is not the rank the peak is reported for.
    derived = extrapolate_figures({4: figures(100, 50), 8: figures(120, 90)}, 32)
    assert derived["peak_allocated_bytes"] == 330 and derived["peak_reserved_bytes"] == 660


def _pipeline_study(schedule: str, extrapolate: bool) -> Study:
    """Two pipeline stages of a tiny GPT on two H100s, global batch 16 of micro-batch 1: accum = 16."""
    from ray import tune

    return Study(
        script=ROOT / "examples" / "train_gpt.py", script_args=TINY_GPT,
        search_space={"pp": 2, "pp_schedule": tune.choice([schedule]), "micro_batch": 1}, global_batch=16,
        train_steps=100, clusters=(ClusterCandidate(preset="dgx-h100", gpus_per_node=2),), search="grid",
        extrapolate_accum=extrapolate,
    )


@pytest.mark.parametrize("schedule", ["1f1b", "interleaved"])
def test_extrapolated_pipeline_matches_a_full_emulation(ray_local, tmp_path, schedule):
    config = {"pp": 2, "pp_schedule": schedule, "micro_batch": 1}
    derived = evaluate(_pipeline_study(schedule, True), config, TraceCache(tmp_path / "derived"))
    assert derived.status is TrialStatus.OK and derived.cache is CacheUse.MISS, derived.error
    assert derived.accum == 16 and derived.accum_emulated == ("3,4" if schedule == "1f1b" else "4,6")
    full = evaluate(_pipeline_study(schedule, False), config, TraceCache(tmp_path / "full"))
    assert full.status is TrialStatus.OK and full.accum_emulated is None, full.error
    # The bound against emulating all 16 micro-batches: step time within 3%, peak allocated within 5%;
    # reserved (the allocated peak times the larger count's reserved/allocated ratio) from -5% to +30%,
    # as benchmarks/results/accum_extrapolation.json measured it (-0.7% to +25%).
    assert derived.step_time_ms == pytest.approx(full.step_time_ms, rel=0.03)
    assert derived.peak_allocated_bytes == pytest.approx(full.peak_allocated_bytes, rel=0.05)
    assert -0.05 <= derived.peak_reserved_bytes / full.peak_reserved_bytes - 1 <= 0.30
    # The two small counts are cache entries of their own: the same configuration again emulates nothing.
    again = evaluate(_pipeline_study(schedule, True), config, TraceCache(tmp_path / "derived"))
    assert again.cache is CacheUse.HIT and again.step_time_ms == derived.step_time_ms


def test_a_small_count_out_of_memory_ends_the_configuration(make_study, tmp_path):
    # tiny_train allocates 4 TiB at micro-batch 1; global batch 8 of micro-batch 1 is 8 micro-batches (> 2 + 3).
    from ray import tune

    study = make_study(script_args=("--steps", "1", "--dim", "64", "--oom-on-batch", "1"),
                       search_space={"micro_batch": tune.choice([1])})
    outcome = evaluate(study, {"micro_batch": 1}, TraceCache(tmp_path))
    assert outcome.status is TrialStatus.INFEASIBLE and outcome.accum == 8
    assert "(at accum=2, emulated to extrapolate to accum=8)" in outcome.reason
    assert len([p for p in tmp_path.iterdir() if p.is_dir()]) == 1  # accum=3 was never emulated


def test_over_memory_at_the_fewer_micro_batches_ends_the_configuration(make_study, tmp_path):
    # Memory only grows with micro-batches: a peak over the GPU at accum=2 rules out accum=8 without
    # emulating accum=3.
    from ray import tune

    study = make_study(search_space={"micro_batch": tune.choice([1])}, max_memory_fraction=1e-6)
    outcome = evaluate(study, {"micro_batch": 1}, TraceCache(tmp_path))
    assert outcome.status is TrialStatus.INFEASIBLE and outcome.accum == 8, outcome.reason
    assert "at accum=2 > max_memory_fraction=1e-06" in outcome.reason and "accum=8 holds at least as much" in outcome.reason
    assert outcome.peak_reserved_bytes > 0
    assert len([p for p in tmp_path.iterdir() if p.is_dir()]) == 1  # accum=3 was never emulated
    # With room, both counts are emulated and the configuration fits.
    fits = evaluate(replace(study, max_memory_fraction=1.0), {"micro_batch": 1}, TraceCache(tmp_path))
    assert fits.status is TrialStatus.OK and fits.accum_emulated == "2,3", fits.reason


def test_extrapolate_accum_must_be_a_bool(make_study):
    from maya.tune.study import StudyFieldError

    with pytest.raises(StudyFieldError, match="extrapolate_accum='no' must be True or False"):
        make_study(extrapolate_accum="no")


def test_extrapolation_can_be_turned_off(make_study, tmp_path):
    from ray import tune

    study = replace(make_study(search_space={"micro_batch": tune.choice([1])}), extrapolate_accum=False)
    outcome = evaluate(study, {"micro_batch": 1}, TraceCache(tmp_path))
    assert outcome.status is TrialStatus.OK and outcome.accum_emulated is None and outcome.argv.endswith("--accum 8 --batch 1")
