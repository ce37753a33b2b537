"""How long HyperOpt's proposals take through `PruningSearcher` as a converging study goes on.

Replays the space of examples/tune_llama.py through the searcher without running any trial: each
configuration gets a made-up objective (seeded: 30% of them a cost between 1e6 and 2e6, the rest
infeasible), as a study would report it. Prints the searcher's counts and the seconds per 100
returned trials. `--repeats-after-draw 20` asks HyperOpt as often after a draw as before it, the
behaviour before `REPEATS_AFTER_DRAW` (maya/tune/pruning_searcher.py).

    python benchmarks/searcher_speed.py --trials 1200
    python benchmarks/searcher_speed.py --trials 400 --repeats-after-draw 20
"""

import argparse
import random
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default=str(ROOT / "examples" / "tune_llama.py"))
    p.add_argument("--trials", type=int, default=1200, help="returned trials to replay")
    p.add_argument("--repeats-after-draw", type=int, default=None,
                   help="override pruning_searcher.REPEATS_AFTER_DRAW")
    args = p.parse_args()
    from maya.tune import load_study, pruning_searcher
    from maya.tune.search_setup import METRIC, search_setup
    from maya.tune.space import full_space

    if args.repeats_after_draw is not None:
        pruning_searcher.REPEATS_AFTER_DRAW = args.repeats_after_draw
    study = replace(load_study(args.config), num_samples=100_000)
    searcher = pruning_searcher.PruningSearcher(search_setup(study).search_alg, study, metric=METRIC,
                                                max_configs=study.num_samples,
                                                log_path=Path(tempfile.mkdtemp()) / "pruned.jsonl")
    searcher.set_search_properties(METRIC, "min", full_space(study))
    rng = random.Random(0)
    objectives: dict = {}
    print("| trials | proposed | pruned | repeats answered | drawn | s per 100 trials |")
    print("|---:|---:|---:|---:|---:|---:|")
    last = time.perf_counter()
    for n in range(args.trials):
        config = searcher.suggest(f"t{n}")
        if config in (None, "FINISHED"):
            break
        key = tuple(sorted(config.items()))
        value = objectives.setdefault(key, 1e6 * (1 + rng.random()) if rng.random() < 0.3 else 1e30)
        searcher.on_trial_complete(f"t{n}", {METRIC: value})
        if (n + 1) % 100 == 0:
            now = time.perf_counter()
            print(f"| {n + 1} | {searcher.suggested} | {searcher.pruned} | {searcher.repeats} | {searcher.drawn} | "
                  f"{now - last:.1f} |", flush=True)
            last = now


if __name__ == "__main__":
    main()
