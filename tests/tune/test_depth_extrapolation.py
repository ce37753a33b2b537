"""Depth extrapolation: the depths, the study's depth fields, and a full-depth emulation as the reference."""

from dataclasses import replace

import pytest

from maya.tune.candidate import resolve_candidate
from maya.tune.depth_extrapolation import depth_counts, with_depth
from maya.tune.evaluate import evaluate
from maya.tune.outcome import CacheUse, TrialStatus
from maya.tune.study import ClusterCandidate, Study, StudyFieldError
from maya.tune.trace_cache import TraceCache

from conftest import ROOT

GPT_ARGS = ("--steps", "1", "--seq", "64", "--dim", "64", "--layers", "{layers}", "--heads", "4", "--vocab", "512",
            "--precision", "bf16")


def _study(layers: int, *, depth: bool, **fields) -> Study:
    """A tiny GPT on one H100 (global batch 4 of micro-batch 2: accum 2), `layers` blocks deep."""
    from ray import tune

    args = tuple(a.format(layers=layers) for a in GPT_ARGS)
    return Study(
        script=ROOT / "examples" / "train_gpt.py", script_args=args,
        search_space={"micro_batch": tune.choice([2])}, global_batch=4, train_steps=100,
        clusters=(ClusterCandidate(preset="dgx-h100", gpus_per_node=1),), search="grid",
        **{"depth_flag": "--layers" if depth else None, **fields},
    )


def test_depths_are_multiples_of_the_unit_and_only_when_cheaper():
    study = _study(24, depth=True)
    assert study.full_depth == 24
    assert depth_counts(study, {"pp": 1}) == (3, 4)
    assert depth_counts(study, {"pp": 2}) == (6, 8)
    assert depth_counts(study, {"pp": 4}) is None  # 12 + 16 blocks cost more than 24: all 24 are emulated
    assert depth_counts(_study(8, depth=True), {"pp": 1}) == (3, 4)
    assert depth_counts(_study(7, depth=True), {"pp": 1}) is None  # 3 + 4 blocks cost as much as 7
    interleaved = _study(80, depth=True, depth_unit=lambda c: 2 * c["pp"])
    assert depth_counts(interleaved, {"pp": 4}) == (24, 32)
    assert depth_counts(interleaved, {"pp": 8}) is None
    assert depth_counts(_study(24, depth=False), {"pp": 1}) is None


def test_the_depth_replaces_the_flags_value_in_the_argv():
    study = _study(24, depth=True)
    assert with_depth(study.script_args, "--layers", 3)[study.script_args.index("--layers") + 1] == "3"
    candidate = resolve_candidate(study, {"micro_batch": 2})
    assert candidate.argv[candidate.argv.index("--layers") + 1] == "24"  # the configuration keeps the full depth


def test_bad_depth_fields_name_the_field():
    with pytest.raises(StudyFieldError, match="depth_flag: --depth is not in script_args"):
        _study(24, depth=False, depth_flag="--depth")
    with pytest.raises(StudyFieldError, match="must be followed by the depth"):
        Study(**{**_fields(), "script_args": ("--layers",), "depth_flag": "--layers"})
    with pytest.raises(StudyFieldError, match="depth_unit: set depth_flag too"):
        _study(24, depth=False, depth_unit=lambda c: 1)
    bad_unit = _study(24, depth=True, depth_unit=lambda c: 0)
    with pytest.raises(ValueError, match="returned 0; it must return an integer >= 1"):
        depth_counts(bad_unit, {"pp": 1})


def _fields() -> dict:
    study = _study(24, depth=False)
    return {name: getattr(study, name) for name in ("script", "search_space", "global_batch", "train_steps", "clusters")}


def test_extrapolated_depth_matches_a_full_emulation(ray_local, tmp_path):
    config = {"micro_batch": 2}
    derived = evaluate(_study(12, depth=True), config, TraceCache(tmp_path / "derived"))
    assert derived.status is TrialStatus.OK and derived.cache is CacheUse.MISS, derived.error
    assert derived.depth_emulated == "3,4" and derived.accum_emulated is None
    full = evaluate(_study(12, depth=False), config, TraceCache(tmp_path / "full"))
    assert full.status is TrialStatus.OK and full.depth_emulated is None, full.error
    # benchmarks/results/depth_extrapolation.json: within 0.4% on a 24-block GPT; bound 2% here.
    assert derived.step_time_ms == pytest.approx(full.step_time_ms, rel=0.02)
    assert derived.peak_allocated_bytes == pytest.approx(full.peak_allocated_bytes, rel=0.02)
    again = evaluate(_study(12, depth=True), config, TraceCache(tmp_path / "derived"))
    assert again.cache is CacheUse.HIT and again.step_time_ms == derived.step_time_ms


def test_a_shallow_point_over_memory_ends_the_configuration(tmp_path):
    # Memory grows with depth: the shallowest emulation's own peak over the GPU rules out the full
    # depth without emulating the deeper point.
    outcome = evaluate(_study(12, depth=True, max_memory_fraction=1e-6), {"micro_batch": 2}, TraceCache(tmp_path))
    assert outcome.status is TrialStatus.INFEASIBLE and outcome.peak_reserved_bytes > 0, outcome.reason
    assert "at depth=3 > max_memory_fraction=1e-06" in outcome.reason and "depth=12 holds at least as much" in outcome.reason
    assert len([p for p in tmp_path.iterdir() if p.is_dir()]) == 1  # depth 4 was never emulated


def _corner(depth: int, accum: int, per_microbatch_gib: float) -> dict:
    """Figures of one emulated corner whose one memory segment is 1 + depth + c * accum + 0.1 * depth * accum GiB."""
    gib = 1 << 30
    allocated = round((1 + depth + per_microbatch_gib * accum + 0.1 * depth * accum) * gib)
    return {"iteration_ms": [10.0], "step_time_ms": 10.0, "peak_allocated_bytes": allocated,
            "peak_reserved_bytes": allocated, "breakdown_ms": {}, "memory_segments": {"0": [allocated]},
            "memory_rank": 0, "top_ops": [], "timeline": None, "trace_dir": "d"}


def at_full_depth(figures: dict) -> dict:
    """The corners at 2 micro-batches extrapolated to depth 24, as `_extrapolated` hands them on."""
    from maya.tune.accum_extrapolation import extrapolate_figures

    return extrapolate_figures({2: figures[2, 2], 3: figures[3, 2]}, 24, axis="depth")


def test_three_corners_bound_the_memory_before_the_deepest_one_is_emulated():
    # Depth 24 on an 80 GiB H100, 16 micro-batches, corners at depths 2, 3 and micro-batch counts 2, 3.
    # At 2 micro-batches the full depth needs 1 + 24 + 10 + 4.8 = 39.8 GiB (fits), but each micro-batch
    # keeps 5 GiB whatever the depth: m(24, 16) >= m(24, 2) + m(2, 16) - m(2, 2) = 39.8 + 86.2 - 13.4.
    from maya.tune.evaluate import _over_memory_by_three_corners

    study = replace(_study(24, depth=True), global_batch=32)
    candidate = resolve_candidate(study, {"micro_batch": 2})
    assert candidate.accum == 16
    figures = {(d, a): _corner(d, a, 5.0) for d in (2, 3) for a in (2, 3)}
    over = _over_memory_by_three_corners(study, candidate, (2, 3), (2, 3), figures, at_full_depth(figures))
    assert over is not None and over["status"] == TrialStatus.INFEASIBLE.value
    assert over["peak_allocated_bytes"] / (1 << 30) == pytest.approx(39.8 + 86.2 - 13.4, abs=1e-6)
    assert "bounded below from depth=2 and 3, accum=2 and 3" in over["reason"] and "h100" in over["reason"]
    # Half a GiB per micro-batch: 27.8 + 12.2 - 4.4 = 35.6 GiB fits, and the deepest corner is emulated.
    light = {(d, a): _corner(d, a, 0.5) for d in (2, 3) for a in (2, 3)}
    assert _over_memory_by_three_corners(study, candidate, (2, 3), (2, 3), light, at_full_depth(light)) is None
