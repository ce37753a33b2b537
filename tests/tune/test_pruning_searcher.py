"""`PruningSearcher` without Ray Tune around it: pruned configurations answered and logged, state saved and restored."""

import json

from maya.tune.pruning_searcher import PruningSearcher, read_pruned
from maya.tune.search_setup import METRIC, search_setup
from maya.tune.space import full_space


def _searcher(make_study, tmp_path, **fields):
    from ray import tune

    # Global batch 8: micro-batches 3, 5, 6 and 7 cannot run.
    study = make_study(search_space={"micro_batch": tune.choice([2, 3, 4, 5, 6, 7])}, search="hyperopt",
                       num_samples=10, seed=4, **fields)
    setup = search_setup(study)
    searcher = PruningSearcher(setup.search_alg, study, metric=METRIC, max_configs=10, log_path=tmp_path / "pruned.jsonl")
    searcher.set_search_properties(METRIC, "min", full_space(study))
    return searcher


def test_pruned_configurations_are_logged_and_only_runnable_ones_returned(make_study, tmp_path):
    searcher = _searcher(make_study, tmp_path)
    returned = []
    while (config := searcher.suggest(f"t{len(returned)}")) not in (None, "FINISHED"):
        assert config["micro_batch"] in (2, 4)
        returned.append(config)
        searcher.on_trial_complete(f"t{len(returned) - 1}", {METRIC: 1.0})
    rows = read_pruned(tmp_path / "pruned.jsonl")
    assert len(returned) + len(rows) == 10 == searcher.suggested
    assert rows and {r["micro_batch"] for r in rows} <= {3, 5, 6, 7}
    assert all("not a multiple" in r["reason"] and r["status"] == "pruned" for r in rows)


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
    assert second.suggested == 10 and len(read_pruned(tmp_path / "pruned.jsonl")) == second.pruned
    json.dumps(read_pruned(tmp_path / "pruned.jsonl"))  # the log is plain JSON
