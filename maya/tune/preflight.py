"""`preflight`: every check of a study that can run before Ray starts, so bad input fails at once.

It finds the script, loads every candidate cluster at every node count, makes sure the layout
dimensions can be listed, and enumerates their combinations (micro-batch x tp x pp x cluster x
nodes) through the same pruning rules the trials use. A study none of whose combinations can run
(most often: no micro-batch and data-parallel degree divides the global batch) is refused, naming
the field and giving the reasons.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from dataclasses import dataclass

from maya.tune.candidate import PrunedConfig, resolve_candidate
from maya.tune.space import dimension_values, full_space, grid_size, grid_space
from maya.tune.study import Study, StudyFieldError

MAX_ENUMERATED = 200_000
"""Layout combinations checked exhaustively; larger spaces are sampled (seeded)."""
_SAMPLED = 50_000
_PRUNING_DIMENSIONS = ("micro_batch", "tp", "pp", "cluster", "nodes")


@dataclass(frozen=True, kw_only=True, slots=True)
class SpaceSummary:
    """What preflight found out about a study's space."""

    layouts: int
    """Combinations of micro-batch, tp, pp, cluster and node count checked."""
    runnable: int
    """Of those, the ones no built-in rule prunes."""
    grid_size: int | None
    """Configurations of the whole grid when the search is `grid`; None otherwise."""


def preflight(study: Study) -> SpaceSummary:
    """Check `study` without Ray: script, clusters, host profiles, listable layout dimensions, a runnable layout.

    Raises:
        StudyFieldError: naming the field at fault and why.
    """
    if not study.script.is_file():
        raise StudyFieldError("script", f"training script not found: {study.script}")
    specs: dict = {}
    for candidate in study.clusters:
        for nodes in candidate.nodes:
            try:
                specs[(candidate, nodes)] = candidate.spec(nodes)
            except ValueError as e:
                raise StudyFieldError("clusters", f"{candidate.name!r} with {nodes} nodes: {e}") from None
    used = {spec.gpu for spec in specs.values()}
    unused = sorted(set(study.host_profiles) - used)
    if unused:
        raise StudyFieldError("host_profiles", f"{unused} is the GPU of no candidate cluster (theirs: {sorted(used)})")
    space = full_space(study)
    for name, value in space.items():
        values = dimension_values(value)
        if values is not None and not values:
            raise StudyFieldError("search_space", f"{name!r} has no values")
        if name in _PRUNING_DIMENSIONS and values is None:
            raise StudyFieldError(
                "search_space",
                f"{name!r} must be a tune.choice, tune.grid_search, tune.randint or a constant, got {value!r}",
            )
    grid = None
    if study.search == "grid":
        grid_space(space)
        grid = grid_size(space)
    layouts, runnable = _count_runnable(study, space, specs)
    return SpaceSummary(layouts=layouts, runnable=runnable, grid_size=grid)


def _count_runnable(study: Study, space: dict, specs: dict) -> tuple[int, int]:
    names = [n for n in _PRUNING_DIMENSIONS if n in space]
    value_lists = [dimension_values(space[n]) for n in names]
    total = 1
    for values in value_lists:
        total *= len(values)
    combos = itertools.product(*value_lists)
    sampled = total > MAX_ENUMERATED
    if sampled:
        rng = random.Random(study.seed)
        combos = (tuple(rng.choice(values) for values in value_lists) for _ in range(_SAMPLED))
    runnable = 0
    reasons: Counter = Counter()
    examples: dict[str, str] = {}
    for combo in combos:
        try:
            resolve_candidate(study, dict(zip(names, combo)), specs, apply_check=False)
            runnable += 1
        except PrunedConfig as e:
            reasons[e.field] += 1
            examples.setdefault(e.field, e.reason)
    if runnable == 0:
        field_name, _ = reasons.most_common(1)[0]
        detail = "; ".join(f"{n} x {f}: e.g. {examples[f]}" for f, n in reasons.most_common())
        what = f"{_SAMPLED} sampled" if sampled else f"all {total}"
        raise StudyFieldError(field_name, f"no configuration can run ({what} layouts of {names} pruned: {detail})")
    return (_SAMPLED if sampled else total), runnable
