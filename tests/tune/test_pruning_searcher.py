"""`PruningSearcher` without Ray Tune around it (real HyperOpt): pruned configurations answered and
logged, repeated proposals answered without a trial, state saved and restored."""

import json

from maya.tune.pruning_searcher import SEARCHER_STATS, PruningSearcher, read_pruned
from maya.tune.search_setup import METRIC, search_setup
from maya.tune.space import full_space


def _searcher(make_study, tmp_path, space=None, num_samples=10):
    from ray import tune

    # Global batch 8: micro-batches 3, 5, 6 and 7 cannot run.
    space = space or {"micro_batch": tune.choice([2, 3, 4, 5, 6, 7])}
    study = make_study(search_space=space, search="hyperopt", num_samples=num_samples, seed=4)
    setup = search_setup(study)
    searcher = PruningSearcher(setup.search_alg, study, metric=METRIC, max_configs=num_samples,
                               log_path=tmp_path / "pruned.jsonl")
    searcher.set_search_properties(METRIC, "min", full_space(study))
    return searcher


def _run(searcher, objective=lambda config: 1.0, start=0):
    """Suggest and complete trials until the searcher stops; the configurations it returned."""
    returned = []
    while (config := searcher.suggest(f"t{start + len(returned)}")) not in (None, "FINISHED"):
        returned.append(config)
        searcher.on_trial_complete(f"t{start + len(returned) - 1}", {METRIC: objective(config)})
    return returned


def test_pruned_configurations_are_logged_and_only_runnable_ones_returned(make_study, tmp_path):
    searcher = _searcher(make_study, tmp_path, num_samples=4)
    returned = _run(searcher)
    assert {c["micro_batch"] for c in returned} <= {2, 4}
    rows = read_pruned(tmp_path / "pruned.jsonl")
    assert len(returned) + len(rows) == 4 == searcher.suggested
    assert rows and {r["micro_batch"] for r in rows} <= {3, 5, 6, 7}
    assert all("not a multiple" in r["reason"] and r["status"] == "pruned" for r in rows)


def test_each_configuration_is_proposed_once_and_the_study_ends_with_the_space(make_study, tmp_path):
    # 6 configurations, 10 samples asked for: HyperOpt repeats itself, the searcher never does.
    searcher = _searcher(make_study, tmp_path, num_samples=10)
    returned = _run(searcher, objective=lambda config: float(config["micro_batch"]))
    assert sorted(c["micro_batch"] for c in returned) == [2, 4]
    pruned = sorted(r["micro_batch"] for r in read_pruned(tmp_path / "pruned.jsonl"))
    assert pruned == [3, 5, 6, 7]
    assert searcher.suggested == 6 and searcher.repeats > 0
    assert searcher.suggest("t_after") == "FINISHED"
    stats = json.loads((tmp_path / SEARCHER_STATS).read_text())
    assert stats == {"proposed": 6, "pruned": 4, "repeats_answered": searcher.repeats, "drawn_unproposed": searcher.drawn,
                     "space_exhausted": True}


def test_a_converged_search_draws_configurations_not_proposed_yet(make_study, tmp_path):
    from ray import tune

    # 2 x 40 configurations; one objective far better than the rest pulls TPE back to it.
    space = {"micro_batch": tune.choice([2, 4]), "knob": tune.choice(list(range(40)))}
    searcher = _searcher(make_study, tmp_path, space=space, num_samples=80)
    returned = _run(searcher, objective=lambda c: 1.0 if (c["micro_batch"], c["knob"]) == (2, 0) else 100.0)
    keys = [(c["micro_batch"], c["knob"]) for c in returned]
    assert len(keys) == len(set(keys)) == 80
    assert searcher.drawn > 0


def test_state_survives_save_and_restore(make_study, tmp_path):
    first = _searcher(make_study, tmp_path)
    for i in range(3):
        config = first.suggest(f"t{i}")
        first.on_trial_complete(f"t{i}", {METRIC: 1.0})
    first.save(str(tmp_path / "state.pkl"))
    second = _searcher(make_study, tmp_path)
    second.restore(str(tmp_path / "state.pkl"))
    assert (second.suggested, second.pruned) == (first.suggested, first.pruned)
    assert second.suggested >= 3 and config is not None
    assert len(read_pruned(tmp_path / "pruned.jsonl")) == first.pruned
    i = 3
    while second.suggest(f"t{i}") not in (None, "FINISHED"):  # the restored searcher goes on to num_samples
        second.on_trial_complete(f"t{i}", {METRIC: 1.0})
        i += 1
    assert second.suggested == 6 and len(read_pruned(tmp_path / "pruned.jsonl")) == second.pruned
    json.dumps(read_pruned(tmp_path / "pruned.jsonl"))  # the log is plain JSON


def test_configurations_that_launch_the_same_are_evaluated_once(make_study, tmp_path):
    from ray import tune

    # Without a pipeline (pp=1) the schedule is not passed: 4 configurations, 2 launches.
    space = {"micro_batch": tune.choice([2, 4]), "pp_schedule": tune.choice(["1f1b", "interleaved"])}
    searcher = _searcher(make_study, tmp_path, space=space, num_samples=10)
    returned = _run(searcher)
    assert sorted(c["micro_batch"] for c in returned) == [2, 4]
    assert searcher.suggested == 2 and searcher.suggest("t_after") == "FINISHED"
