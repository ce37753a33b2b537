"""`search_setup`: the Ray Tune search algorithm, parameter space and trial count of a study."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from maya.tune.space import full_space, grid_space
from maya.tune.study import Study

METRIC = "objective"
"""The reported key every search algorithm minimises (see `maya.tune.cost.objective_value`)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SearchSetup:
    """What `ray.tune.Tuner` is given for a study."""

    param_space: dict[str, Any]
    """The Tune parameter space (with `cluster` and `nodes`; grid dimensions for grid search)."""
    search_alg: Any
    """A `ray.tune.search.Searcher` or `SearchAlgorithm`."""
    num_samples: int
    """Trials to run (for a grid, each grid point once)."""


def search_setup(study: Study) -> SearchSetup:
    """HyperOpt's TPE, random sampling or the full grid, seeded with `study.seed`.

    Raises:
        ImportError: `search='hyperopt'` without the hyperopt package (with the install command).
    """
    from ray.tune.search import BasicVariantGenerator, ConcurrencyLimiter

    space = full_space(study)
    if study.search == "grid":
        return SearchSetup(param_space=grid_space(space), num_samples=1,
                           search_alg=BasicVariantGenerator(random_state=study.seed))
    if study.search == "random":
        return SearchSetup(param_space=space, num_samples=study.num_samples,
                           search_alg=BasicVariantGenerator(random_state=study.seed))
    try:
        import hyperopt  # noqa: F401  (HyperOptSearch's own error does not say how to install it)
    except ImportError as e:
        raise ImportError("search='hyperopt' needs the hyperopt package: pip install hyperopt") from e
    from ray.tune.search.hyperopt import HyperOptSearch

    # TPE starts from random points; a third of a small study, at most HyperOpt's usual 20.
    searcher = HyperOptSearch(random_state_seed=study.seed, n_initial_points=max(1, min(20, study.num_samples // 3)))
    if study.max_concurrent_trials is not None:
        searcher = ConcurrencyLimiter(searcher, max_concurrent=study.max_concurrent_trials)
    return SearchSetup(param_space=space, num_samples=study.num_samples, search_alg=searcher)
