"""`Study`: everything one configuration search needs, as `maya tune config.py` declares it.

A study fixes the work (a global batch per optimizer step and how many steps or tokens to train)
and searches the ways to run it: the per-rank layout (micro-batch, tensor and pipeline parallel
degrees, activation checkpointing, precision, any script flag) and the cluster (GPU type, node count,
price). Data-parallel degree and gradient accumulation follow from those:

    dp = world_size / (tp * pp)              world_size = nodes * gpus_per_node
    accum = global_batch / (micro_batch * dp)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Objective = Literal["cost", "time"]
"""What a study minimises: dollars to train the fixed work, or wall time to train it."""
SearchAlgorithm = Literal["hyperopt", "random", "grid"]
"""How configurations are proposed: HyperOpt's TPE, uniform random sampling, or every grid point."""

OBJECTIVES: tuple[str, ...] = ("cost", "time")
SEARCH_ALGORITHMS: tuple[str, ...] = ("hyperopt", "random", "grid")

LAYOUT_DIMENSIONS: tuple[str, ...] = ("micro_batch", "tp", "pp", "pp_schedule", "dp_mode")
"""Search-space keys with a meaning to Maya; every other key is a script flag."""
LAUNCH_DIMENSIONS: tuple[str, ...] = ("cluster", "nodes")
"""Search-space keys that choose the cluster a configuration launches on (never script flags)."""

DEFAULT_FLAGS: Mapping[str, str | None] = {
    "micro_batch": "--batch",
    "accum": "--accum",
    "tp": "--tp",
    "pp": "--pp",
    "pp_schedule": "--pp-schedule",
    "dp_mode": "--dp",
}
"""The script flag of each layout dimension (examples/train_gpt.py's names); None: not passed."""

INCREASING, DECREASING = "increasing", "decreasing"
"""`Study.memory_order` values for numeric dimensions: more memory per GPU with larger (smaller) values."""

RESULT_COLUMNS: tuple[str, ...] = (
    "trial_id", "status", "reason", "objective", "step_time_ms", "time_to_train_s", "cost_usd",
    "peak_allocated_bytes", "peak_reserved_bytes", "world_size", "gpus_per_node", "dp", "accum", "accum_emulated", "depth_emulated",
    "gpu", "price_per_gpu_hour_usd", "cache", "argv", "error",
)
"""Columns of the results table that a search-space key may not shadow."""


class StudyFieldError(ValueError):
    """A study field has a value that cannot work; `field` names it and `reason` says why."""

    def __init__(self, field_name: str, reason: str) -> None:
        super().__init__(f"{field_name}: {reason}")
        self.field = field_name
        self.reason = reason


@dataclass(frozen=True, kw_only=True, slots=True)
class ClusterCandidate:
    """One kind of cluster a study may rent, at any of several node counts."""

    preset: str
    """Cluster preset name (`dgx-h100`, see `maya.hardware.cluster.available_clusters`) or a YAML path."""
    nodes: tuple[int, ...] = (1,)
    """Node counts this cluster can be had with."""
    gpus_per_node: int | None = None
    """GPUs used on each node (torchrun --nproc-per-node); None: all of the preset's."""
    price_per_gpu_hour_usd: float | None = None
    """Price of one GPU for one hour, US dollars; None: the preset's."""
    label: str | None = None
    """Name of this candidate in the search space and the results; None: the preset's name."""

    def __post_init__(self) -> None:
        if not self.nodes or any(not isinstance(n, int) or n < 1 for n in self.nodes):
            raise StudyFieldError("clusters", f"{self.name!r}: nodes={list(self.nodes)} must be integers >= 1")
        if self.gpus_per_node is not None and (not isinstance(self.gpus_per_node, int) or self.gpus_per_node < 1):
            raise StudyFieldError("clusters", f"{self.name!r}: gpus_per_node={self.gpus_per_node!r} must be an integer >= 1")
        if self.price_per_gpu_hour_usd is not None and not self.price_per_gpu_hour_usd >= 0:
            raise StudyFieldError("clusters", f"{self.name!r}: price_per_gpu_hour_usd={self.price_per_gpu_hour_usd} must be >= 0")

    @property
    def name(self) -> str:
        """The label, or the preset's file stem."""
        return self.label or Path(self.preset).stem

    def spec(self, nodes: int):
        """The `ClusterSpec` of this candidate with `nodes` nodes (reads the preset's YAML).

        Raises:
            ValueError: unknown preset, or a spec that fails `ClusterSpec` validation.
        """
        from dataclasses import replace

        from maya.hardware.cluster import load_cluster

        spec = load_cluster(self.preset, nodes=nodes)
        changes: dict[str, Any] = {"name": self.name}
        if self.gpus_per_node is not None:
            changes["gpus_per_node"] = self.gpus_per_node
            # Using fewer GPUs of each node keeps the number of nodes an NVLink domain spans.
            nodes_per_domain = max(1, spec.nvlink_domain_size // spec.gpus_per_node)
            changes["nvlink_domain_size"] = nodes_per_domain * self.gpus_per_node
        if self.price_per_gpu_hour_usd is not None:
            changes["price_per_gpu_hour_usd"] = float(self.price_per_gpu_hour_usd)
        return replace(spec, **changes)


@dataclass(frozen=True, kw_only=True, slots=True)
class Study:
    """A configuration search: the script, the space, the fixed work, the clusters and the goal."""

    script: Path
    """The unmodified training script (absolute once loaded from a config file)."""
    search_space: Mapping[str, Any]
    """Ray Tune search space (`tune.choice`, `tune.randint`, constants); must hold `micro_batch`."""
    global_batch: int
    """Samples per optimizer step over all data-parallel ranks; every configuration keeps it."""
    clusters: tuple[ClusterCandidate, ...]
    """The clusters a configuration may run on."""
    script_args: tuple[str, ...] = ()
    """Flags passed to the script in every configuration (model size, --steps to emulate, ...)."""
    train_steps: int | None = None
    """Optimizer steps of the fixed work; give this or `train_tokens`."""
    train_tokens: int | None = None
    """Tokens of the fixed work; needs `tokens_per_sample`."""
    tokens_per_sample: int | None = None
    """Tokens in one sample (the sequence length), to turn `train_tokens` into steps."""
    objective: Objective = "cost"
    """`cost`: US dollars to train the fixed work; `time`: seconds to train it."""
    search: SearchAlgorithm = "hyperopt"
    """How configurations are proposed: `hyperopt` (TPE), `random` or `grid`."""
    num_samples: int = 64
    """Trials for `hyperopt` and `random`; `grid` runs every grid point once."""
    max_gpus: int | None = None
    """Largest world size a configuration may use; None: no limit beyond the clusters'."""
    max_memory_fraction: float = 1.0
    """A configuration fits when its peak reserved memory is at most this share of the GPU's."""
    max_rank_classes: int | None = 32
    """A configuration whose ranks fall into more classes than this (each emulated once) fails at
    once, naming the group families that split them, instead of emulating them all; None: no limit."""
    memory_dominance: bool = True
    """Report a configuration infeasible without emulating it when one already found over memory needs
    no more memory per GPU (maya.tune.memory_dominance: same GPU, micro-batch at least as large, dp at
    most as large, `memory_order` dimensions at least as far along, everything else equal)."""
    memory_order: Mapping[str, Any] | None = None
    """For memory dominance, searched dimensions whose values order the memory per GPU: 'increasing',
    'decreasing', or a list of values, least memory first ({"checkpoint": ["full", "none"]});
    micro_batch is 'increasing' already."""
    tp_within_node: bool = True
    """Prune configurations whose tensor-parallel group spans nodes (tp > gpus_per_node)."""
    extrapolate_accum: bool = True
    """Emulate two small micro-batch counts and extrapolate to a configuration's accum when that is
    cheaper (maya.tune.accum_extrapolation); False: emulate every accum as it is."""
    depth_flag: str | None = None
    """Script flag in `script_args` that sets the model's depth, a stack of identical blocks
    (`--layers`). With it, a configuration is emulated at two small depths and its figures are
    extrapolated to the full one (maya.tune.depth_extrapolation); None: emulate the full depth."""
    depth_unit: Callable[[Mapping[str, Any]], int] | None = None
    """The smallest depth a resolved configuration runs with (every pipeline stage needs whole
    blocks): gets the configuration, returns an int; None: its pp."""
    flags: Mapping[str, str | None] = field(default_factory=lambda: dict(DEFAULT_FLAGS))
    """Script flag of each layout dimension and of `accum`; None: the script has no such flag."""
    check: Callable[[Mapping[str, Any]], str | None] | None = None
    """Extra pruning rule: gets the resolved configuration, returns a reason to skip it or None."""
    seed: int = 0
    """Seed of the search algorithm."""
    top_k: int = 10
    """How many of the best configurations the results list."""
    cpus_per_trial: float = 1.0
    """Ray CPUs a trial reserves; it emulates in its own process (a world's ranks one after another)."""
    max_concurrent_trials: int | None = None
    """Upper bound on trials running at once; None: as many as the CPUs allow."""
    time_budget_s: float | None = None
    """Stop starting trials after this many seconds (what finished is reported; resume continues); None: no limit."""
    host_profiles: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    """GPU catalog key -> the host costs (`per_op_us`, microseconds) measured on the machines of that
    GPU the job would rent (`maya profile --families host`); clusters of that GPU are predicted with
    them in place of the shipped figures. A config file or `maya.tune` may give each as the profile's
    path (`resolve_host_profiles` reads it)."""
    name: str = "study"
    """Name of the study (the Ray Tune experiment)."""

    def __post_init__(self) -> None:
        if not isinstance(self.search_space, Mapping) or not self.search_space:
            raise StudyFieldError("search_space", "empty search space: give at least `micro_batch`")
        if "micro_batch" not in self.search_space:
            raise StudyFieldError(
                "search_space", "needs 'micro_batch' (samples per rank per forward pass), a tune.choice or a constant"
            )
        shadowed = sorted(set(self.search_space) & set(RESULT_COLUMNS))
        if shadowed:
            raise StudyFieldError("search_space", f"keys {shadowed} are names of result columns; rename them")
        if not isinstance(self.global_batch, int) or self.global_batch < 1:
            raise StudyFieldError("global_batch", f"global_batch={self.global_batch!r} must be an integer >= 1")
        if not self.clusters:
            raise StudyFieldError("clusters", "no candidate cluster")
        names = [c.name for c in self.clusters]
        if len(set(names)) != len(names):
            raise StudyFieldError("clusters", f"labels {names} must be distinct (set `label`)")
        self._check_work()
        if self.objective not in OBJECTIVES:
            raise StudyFieldError("objective", f"{self.objective!r} is not one of {list(OBJECTIVES)}")
        if self.search not in SEARCH_ALGORITHMS:
            raise StudyFieldError("search", f"{self.search!r} is not one of {list(SEARCH_ALGORITHMS)}")
        if not isinstance(self.num_samples, int) or self.num_samples < 1:
            raise StudyFieldError("num_samples", f"num_samples={self.num_samples!r} must be an integer >= 1")
        if self.max_gpus is not None and (not isinstance(self.max_gpus, int) or self.max_gpus < 1):
            raise StudyFieldError("max_gpus", f"max_gpus={self.max_gpus!r} must be an integer >= 1")
        if not 0 < self.max_memory_fraction <= 1:
            raise StudyFieldError("max_memory_fraction", f"max_memory_fraction={self.max_memory_fraction} must be in (0, 1]")
        if self.max_rank_classes is not None and (not isinstance(self.max_rank_classes, int) or self.max_rank_classes < 1):
            raise StudyFieldError("max_rank_classes", f"max_rank_classes={self.max_rank_classes!r} must be an integer >= 1 or None")
        unknown = sorted(set(self.flags) - set(DEFAULT_FLAGS))
        if unknown:
            raise StudyFieldError("flags", f"unknown layout dimensions {unknown}; known: {sorted(DEFAULT_FLAGS)}")
        if not isinstance(self.extrapolate_accum, bool):
            raise StudyFieldError("extrapolate_accum", f"extrapolate_accum={self.extrapolate_accum!r} must be True or False")
        self._check_depth()
        if not isinstance(self.memory_dominance, bool):
            raise StudyFieldError("memory_dominance", f"memory_dominance={self.memory_dominance!r} must be True or False")
        reason = _memory_order_problem(self.memory_order, self.search_space)
        if reason:
            raise StudyFieldError("memory_order", reason)
        if self.check is not None and not callable(self.check):
            raise StudyFieldError("check", f"must be a function of the configuration, got {type(self.check).__name__}")
        if self.time_budget_s is not None and not self.time_budget_s > 0:
            raise StudyFieldError("time_budget_s", f"time_budget_s={self.time_budget_s} must be > 0")
        if not self.cpus_per_trial > 0:
            raise StudyFieldError("cpus_per_trial", f"cpus_per_trial={self.cpus_per_trial} must be > 0")
        if not isinstance(self.top_k, int) or self.top_k < 1:
            raise StudyFieldError("top_k", f"top_k={self.top_k!r} must be an integer >= 1")
        if not isinstance(self.host_profiles, Mapping) or not all(
                isinstance(gpu, str) and isinstance(figures, Mapping) for gpu, figures in self.host_profiles.items()):
            raise StudyFieldError("host_profiles", "must map a GPU (h200, ...) to its host figures; "
                                  "give paths through resolve_host_profiles (config files and maya.tune do)")

    def _check_depth(self) -> None:
        if self.depth_unit is not None and not callable(self.depth_unit):
            raise StudyFieldError("depth_unit", f"must be a function of the configuration, got {type(self.depth_unit).__name__}")
        if self.depth_flag is None:
            if self.depth_unit is not None:
                raise StudyFieldError("depth_unit", "set depth_flag too (the script flag of the depth)")
            return
        if not isinstance(self.depth_flag, str) or not self.depth_flag.startswith("-"):
            raise StudyFieldError("depth_flag", f"depth_flag={self.depth_flag!r} must be a script flag such as '--layers'")
        if self.depth_flag not in self.script_args:
            raise StudyFieldError("depth_flag", f"{self.depth_flag} is not in script_args {list(self.script_args)}: give the full depth there")
        i = self.script_args.index(self.depth_flag)
        value = self.script_args[i + 1] if i + 1 < len(self.script_args) else None
        if value is None or not value.isdigit() or int(value) < 1:
            raise StudyFieldError("depth_flag", f"{self.depth_flag} in script_args must be followed by the depth (an integer >= 1), got {value!r}")

    @property
    def full_depth(self) -> int | None:
        """The depth `script_args` gives after `depth_flag`; None without a depth flag."""
        if self.depth_flag is None:
            return None
        return int(self.script_args[self.script_args.index(self.depth_flag) + 1])

    def _check_work(self) -> None:
        if (self.train_steps is None) == (self.train_tokens is None):
            raise StudyFieldError(
                "train_steps", f"give exactly one of train_steps={self.train_steps} and train_tokens={self.train_tokens}"
            )
        if self.train_steps is not None and (not isinstance(self.train_steps, int) or self.train_steps < 1):
            raise StudyFieldError("train_steps", f"train_steps={self.train_steps!r} must be an integer >= 1")
        if self.train_tokens is not None:
            if not isinstance(self.train_tokens, int) or self.train_tokens < 1:
                raise StudyFieldError("train_tokens", f"train_tokens={self.train_tokens!r} must be an integer >= 1")
            if not isinstance(self.tokens_per_sample, int) or self.tokens_per_sample < 1:
                raise StudyFieldError(
                    "tokens_per_sample", f"train_tokens needs tokens_per_sample (the sequence length), got {self.tokens_per_sample!r}"
                )

    @property
    def steps_to_train(self) -> int:
        """Optimizer steps of the fixed work: train_steps, or ceil(train_tokens / (global_batch * tokens_per_sample))."""
        if self.train_steps is not None:
            return self.train_steps
        return math.ceil(self.train_tokens / (self.global_batch * self.tokens_per_sample))

    def flag(self, dimension: str) -> str | None:
        """The script flag of a layout dimension (or `accum`), after the study's overrides."""
        return self.flags.get(dimension, DEFAULT_FLAGS.get(dimension))

    def cluster(self, name: str) -> ClusterCandidate:
        """The candidate cluster called `name`."""
        for c in self.clusters:
            if c.name == name:
                return c
        raise KeyError(f"no candidate cluster {name!r}; candidates: {[c.name for c in self.clusters]}")


def _memory_order_problem(order: Any, search_space: Mapping[str, Any]) -> str | None:
    """Why a study's `memory_order` cannot work, or None."""
    if order is None:
        return None
    if not isinstance(order, Mapping):
        return f"must map searched dimensions to 'increasing', 'decreasing' or a list of values, got {type(order).__name__}"
    for name, how in order.items():
        if name not in search_space or name in LAUNCH_DIMENSIONS:
            return f"{name!r} is not a searched dimension of the configuration (cluster and nodes are free already)"
        if isinstance(how, str):
            if how not in (INCREASING, DECREASING):
                return f"{name}: {how!r} is not 'increasing', 'decreasing' or a list of values (least memory first)"
        elif not isinstance(how, (list, tuple)) or len(how) < 2:
            return f"{name}: give 'increasing', 'decreasing' or a list of two or more values, least memory first"
    return None


def resolve_host_profiles(value: Any, relative_to: Path | None = None) -> dict[str, dict[str, float]]:
    """`host_profiles` as a study holds them: each GPU's `maya profile --families host` output (DIR or
    DIR/host_overhead.json, relative to `relative_to` when not absolute) read into its per-op figures;
    figures given as a mapping are checked and kept.

    Raises:
        StudyFieldError: not a mapping, a GPU not in the catalog, or a profile missing or malformed.
    """
    from maya.estimator.host_cost import host_profile_figures
    from maya.hardware import available_gpus

    if not isinstance(value, Mapping):
        raise StudyFieldError("host_profiles", f"must be a dict of GPU -> host profile path, got {type(value).__name__}")
    known = available_gpus()
    resolved: dict[str, dict[str, float]] = {}
    for gpu, profile in value.items():
        if gpu not in known:
            raise StudyFieldError("host_profiles", f"{gpu!r} is not a GPU of the catalog ({', '.join(known)})")
        if isinstance(profile, (str, Path)) and relative_to is not None and not Path(profile).is_absolute():
            profile = relative_to / profile
        try:
            resolved[gpu] = host_profile_figures(profile)
        except (FileNotFoundError, ValueError) as e:
            raise StudyFieldError("host_profiles", f"{gpu}: {e}") from None
    return resolved
