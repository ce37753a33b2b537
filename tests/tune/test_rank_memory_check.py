"""Rank memory checks: the bound from the corners emulated so far, and a pipeline corner stopped at its first rank."""

import json
from dataclasses import replace

import pytest

from maya.tune.evaluate import evaluate
from maya.tune.outcome import CacheUse, TrialStatus
from maya.tune.rank_memory_check import memory_bound, stage_order
from maya.tune.study import ClusterCandidate, Study
from maya.tune.trace_cache import TraceCache

from conftest import ROOT

GIB = 1 << 30


def _segment(depth: int, accum: int) -> list[int]:
    """One memory part of 1 + depth + 5 * accum + 0.1 * depth * accum GiB (bilinear, as a block's
    activations per micro-batch make it)."""
    return [round((1 + depth + 5 * accum + 0.1 * depth * accum) * GIB)]


def test_the_bound_grows_with_each_corner_and_names_where_it_comes_from():
    # Depth 24 and 16 micro-batches, from depths 2, 3 and micro-batch counts 2, 3.
    axes = {"depths": (2, 3), "accums": (2, 3), "full_depth": 24, "accum": 16}
    corners = {}
    corners[2, 2] = _segment(2, 2)  # its own peak: 1 + 2 + 10 + 0.4 = 13.4 GiB
    bound, where = memory_bound(corners, **axes)
    assert bound / GIB == pytest.approx(13.4) and where == "depth=2, accum=2 (emulated)"
    corners[3, 2] = _segment(3, 2)  # along depth at 2 micro-batches: 1 + 24 + 10 + 4.8 = 39.8 GiB
    bound, where = memory_bound(corners, **axes)
    assert bound / GIB == pytest.approx(39.8)
    assert where == "depth=24, accum=2, extrapolated from depth=2 and 3; accum=16 holds at least as much"
    corners[2, 3] = _segment(2, 3)  # three corners: 39.8 + (1 + 2 + 80 + 3.2) - 13.4 = 112.6 GiB
    bound, where = memory_bound(corners, **axes)
    assert bound / GIB == pytest.approx(112.6)
    assert where == "depth=24, accum=16, bounded below from depth=2 and 3, accum=2 and 3"
    corners[3, 3] = _segment(3, 3)  # all four: the bilinear memory itself, 1 + 24 + 80 + 38.4 = 143.4 GiB
    bound, where = memory_bound(corners, **axes)
    assert bound / GIB == pytest.approx(143.4, abs=1e-6)
    assert where == "depth=24, accum=16, extrapolated from depth=2 and 3, accum=2 and 3"


def test_one_axis_alone():
    bound, where = memory_bound({(None, 3): [3 * GIB, GIB], (None, 4): [3 * GIB, 2 * GIB]},
                                depths=None, accums=(3, 4), full_depth=None, accum=16)
    assert bound == 14 * GIB and where == "accum=16, extrapolated from accum=3 and 4"  # the tail: 2 + 12 * 1 GiB
    bound, where = memory_bound({(2, None): [4 * GIB], (3, None): [5 * GIB]},
                                depths=(2, 3), accums=None, full_depth=80, accum=1)
    assert bound == 82 * GIB and where == "depth=80, extrapolated from depth=2 and 3"


def test_ranks_go_in_descending_order_of_their_last_peak():
    prior = {(2, 2): {"memory_segments": {"0": [5, 1], "8": [2, 9], "16": [3, 3]}}}
    assert stage_order(prior) == [8, 0, 16] and stage_order({}) == []


def _pipeline_study(**fields) -> Study:
    """A tiny GPT over 2 pipeline stages (1F1B) on one node of 2 H100s: 16 micro-batches from 3 and 4."""
    from ray import tune

    fields = {"script_args": ("--steps", "1", "--seq", "32", "--dim", "64", "--layers", "4", "--heads", "4",
                              "--vocab", "8192"), **fields}
    return Study(
        script=ROOT / "examples" / "train_gpt.py",
        search_space={"pp": 2, "pp_schedule": tune.choice(["1f1b"]), "micro_batch": 1}, global_batch=16,
        train_steps=100, clusters=(ClusterCandidate(preset="dgx-h100", gpus_per_node=2),), search="grid", **fields,
    )


def test_a_pipeline_corner_stops_at_the_rank_that_cannot_fit(tmp_path):
    # The last stage keeps every micro-batch's logits (32 x 8,192 fp32, 1 MiB) to the end of the step:
    # its peak is 96.5 MB reserved at 3 and at 4 micro-batches, 106.5 MB extrapolated to 16. A limit
    # of 101.5 MB lets the first corner through and stops the second at rank 1 (the last stage).
    config = {"pp": 2, "pp_schedule": "1f1b", "micro_batch": 1}
    study = _pipeline_study()
    fits = evaluate(study, config, TraceCache(tmp_path / "room"))
    assert fits.status is TrialStatus.OK and fits.accum_emulated == "3,4", fits.error
    assert fits.peak_reserved_bytes > 101.5e6
    tight = replace(study, max_memory_fraction=101.5e6 / 85_520_809_984)  # of the H100's 79.6 GiB
    cache = TraceCache(tmp_path / "tight")
    # The first corner in the cache (a study of 3 micro-batches emulates it as its own configuration),
    # so the scout (below) is skipped and both stages of the first corner are read from the cache.
    first = evaluate(replace(tight, global_batch=3), config, cache)
    assert first.status is TrialStatus.OK and first.cache is CacheUse.MISS, first.reason
    outcome = evaluate(tight, config, cache)
    assert outcome.status is TrialStatus.INFEASIBLE and outcome.cache is CacheUse.MISS, outcome.reason
    assert "accum=16, extrapolated from accum=3 and 4 (rank 1) > max_memory_fraction" in outcome.reason
    assert outcome.peak_reserved_bytes == pytest.approx(fits.peak_reserved_bytes, rel=0.01)
    # The stopped corner leaves no trace or figures in the cache (another configuration may share it) ...
    assert len(list(cache.root.glob("*/sims/*.json"))) == 1 and len(list(cache.root.glob("*/trace/meta.json"))) == 1
    # ... and the same configuration again is ruled out by the record of the first, without emulating.
    again = evaluate(tight, config, cache)
    assert again.status is TrialStatus.INFEASIBLE and again.cache is CacheUse.DOMINATED, again.reason


def test_a_scout_rules_out_a_pipeline_from_its_last_stage_alone(tmp_path):
    # With no corner cached, the highest rank (the last stage) is emulated alone at both corners: its
    # bound at 16 micro-batches is over the limit, so no world is emulated and nothing is cached but
    # the over-memory record; a limit that fits goes on to the full emulation of both corners.
    config = {"pp": 2, "pp_schedule": "1f1b", "micro_batch": 1}
    tight = _pipeline_study(max_memory_fraction=101.5e6 / 85_520_809_984)
    cache = TraceCache(tmp_path / "tight")
    outcome = evaluate(tight, config, cache)
    assert outcome.status is TrialStatus.INFEASIBLE and outcome.cache is CacheUse.MISS, outcome.reason
    assert "accum=16, extrapolated from accum=3 and 4 (rank 1) > max_memory_fraction" in outcome.reason
    assert not list(cache.root.glob("*/sims/*.json")) and not list(cache.root.glob("*/trace"))
    fits = evaluate(_pipeline_study(), config, TraceCache(tmp_path / "room"))
    assert fits.status is TrialStatus.OK and fits.accum_emulated == "3,4", fits.error
    assert outcome.peak_reserved_bytes == pytest.approx(fits.peak_reserved_bytes, rel=0.01)


def test_a_scout_that_runs_out_of_memory_records_the_point(tmp_path):
    # A vocabulary of 1M tokens over 4,096 positions: the last stage keeps 15.3 GiB of fp32 logits per
    # micro-batch and runs out of the H100's memory inside the script at 4 micro-batches (the first
    # stage would not). That point's cache entry records it, for every configuration that shares it.
    config = {"pp": 2, "pp_schedule": "1f1b", "micro_batch": 1}
    wide = _pipeline_study(script_args=("--steps", "1", "--seq", "4096", "--dim", "64", "--layers", "4", "--heads", "4",
                                        "--vocab", "1000000"))
    cache = TraceCache(tmp_path)
    outcome = evaluate(wide, config, cache)
    assert outcome.status is TrialStatus.INFEASIBLE, outcome.reason
    assert outcome.reason.startswith("out of memory on h100: torch.OutOfMemoryError")
    assert outcome.reason.endswith("(at accum=4, emulated to extrapolate to accum=16)")
    assert outcome.error.startswith("[rank 1] ")
    assert [json.loads(p.read_text())["status"] for p in cache.root.glob("*/outcome.json")] == ["infeasible"]
    assert not list(cache.root.glob("*/trace"))
