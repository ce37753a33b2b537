"""The search space a study hands to Ray Tune: the user's dimensions plus the cluster choice.

Candidate clusters become two dimensions, `cluster` (a label) and `nodes` (the union of every
candidate's node counts; a pairing a cluster does not offer is pruned). Grid search turns every
`tune.choice` into a `tune.grid_search`. Dimensions whose values can be listed (choices, grids,
integer ranges, constants) can also be enumerated before any Ray work, which is how a space that no
configuration of can run is caught at once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from maya.tune.study import Study, StudyFieldError

MAX_LISTED_VALUES = 4096
"""An integer range longer than this is not enumerated."""


def dimension_values(value: Any) -> list | None:
    """Every value a search-space entry can take, or None when they cannot be listed.

    Constants give themselves; `tune.choice` its categories; `tune.grid_search` its list;
    `tune.randint(lo, hi)` lo..hi-1 and `tune.qrandint(lo, hi, q)` the multiples of q in lo..hi.
    """
    from ray.tune.search.sample import Categorical, Domain, Integer, Quantized

    if isinstance(value, Mapping) and set(value) == {"grid_search"}:
        return list(value["grid_search"])
    if isinstance(value, Categorical):
        return list(value.categories)
    if isinstance(value, Integer):
        sampler = value.get_sampler()
        if isinstance(sampler, Quantized):
            q = int(sampler.q)
            values = [v for v in range(value.lower, value.upper + 1) if v % q == 0]
        else:
            values = list(range(value.lower, value.upper))
        return values if len(values) <= MAX_LISTED_VALUES else None
    if isinstance(value, Domain):
        return None
    return [value]


def full_space(study: Study) -> dict[str, Any]:
    """The study's search space with `cluster` and `nodes` added (unless the user set them)."""
    from ray import tune

    space = dict(study.search_space)
    names = [c.name for c in study.clusters]
    nodes = sorted({n for c in study.clusters for n in c.nodes})
    space.setdefault("cluster", tune.choice(names) if len(names) > 1 else names[0])
    space.setdefault("nodes", tune.choice(nodes) if len(nodes) > 1 else nodes[0])
    return space


def grid_space(space: Mapping[str, Any]) -> dict[str, Any]:
    """`space` with every listable dimension as a `tune.grid_search` (constants stay constants).

    Raises:
        StudyFieldError: a dimension (a float range, a `sample_from`) cannot be listed.
    """
    from ray import tune

    grid: dict[str, Any] = {}
    for name, value in space.items():
        values = dimension_values(value)
        if values is None:
            raise StudyFieldError("search_space", f"grid search needs listable values; {name!r} is {value!r}")
        grid[name] = tune.grid_search(values) if len(values) > 1 else values[0]
    return grid


def grid_size(space: Mapping[str, Any]) -> int:
    """Configurations in the grid of `space` (every listable dimension's values multiplied)."""
    return math.prod(len(dimension_values(v) or [None]) for v in space.values())
