"""`Candidate`: one sampled configuration resolved into a launch (cluster, world size) and script argv.

`resolve_candidate` also prunes: a configuration that cannot run (its degrees do not divide the world
size, its micro-batches do not make up the global batch, it needs more GPUs than allowed) raises
`PrunedConfig` with the reason, and is never emulated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from maya.hardware.cluster import ClusterSpec
from maya.tune.depth_extrapolation import with_depth
from maya.tune.study import LAUNCH_DIMENSIONS, LAYOUT_DIMENSIONS, Study


class PrunedConfig(Exception):
    """A configuration ruled out before emulation; `field` is the study field whose rule it broke."""

    def __init__(self, field_name: str, reason: str) -> None:
        super().__init__(reason)
        self.field = field_name
        self.reason = reason


@dataclass(frozen=True, kw_only=True, slots=True)
class Candidate:
    """A configuration ready to emulate: where it launches and what the script is given."""

    cluster: ClusterSpec
    """The cluster it runs on; its world size is the job's."""
    tp: int
    """Tensor-parallel degree."""
    pp: int
    """Pipeline-parallel degree (stages)."""
    dp: int
    """Data-parallel degree: world_size / (tp * pp)."""
    micro_batch: int
    """Samples per rank per forward pass."""
    accum: int
    """Micro-batches per optimizer step (gradient accumulation steps): global_batch / (micro_batch * dp)."""
    dp_mode: str | None
    """`ddp` or `fsdp` when the space chooses it; None otherwise."""
    argv: tuple[str, ...]
    """The script's full argument list."""
    config: Mapping[str, Any]
    """The sampled configuration plus the derived degrees (what a study's `check` sees)."""

    @property
    def world_size(self) -> int:
        """Ranks in the job: nodes * gpus_per_node."""
        return self.cluster.world_size


def resolve_candidate(
    study: Study, config: Mapping[str, Any], specs: dict | None = None, *, apply_check: bool = True
) -> Candidate:
    """Turn one sampled configuration of `study`'s space into a `Candidate`.

    Args:
        study: the study whose space produced `config`.
        config: the sampled values (layout dimensions, `cluster`, `nodes`, script flags).
        specs: memo of `(ClusterCandidate, nodes) -> ClusterSpec`, to read each preset once.
        apply_check: also apply the study's own `check` rule.

    Raises:
        PrunedConfig: the configuration cannot run; nothing was emulated.
    """
    candidate_cluster = study.cluster(config.get("cluster", study.clusters[0].name))
    nodes = int(config.get("nodes", candidate_cluster.nodes[0]))
    if nodes not in candidate_cluster.nodes:
        raise PrunedConfig("clusters", f"cluster {candidate_cluster.name!r} offers nodes {list(candidate_cluster.nodes)}, not {nodes}")
    key = (candidate_cluster, nodes)
    if specs is not None and key in specs:
        spec = specs[key]
    else:
        spec = candidate_cluster.spec(nodes)
        if specs is not None:
            specs[key] = spec
    world_size = spec.world_size
    if study.max_gpus is not None and world_size > study.max_gpus:
        raise PrunedConfig(
            "max_gpus", f"world_size={world_size} (nodes={nodes} * gpus_per_node={spec.gpus_per_node}) > max_gpus={study.max_gpus}"
        )
    tp, pp, micro_batch = int(config.get("tp", 1)), int(config.get("pp", 1)), int(config["micro_batch"])
    for name, value in (("tp", tp), ("pp", pp), ("micro_batch", micro_batch)):
        if value < 1:
            raise PrunedConfig("search_space", f"{name}={value} must be >= 1")
    if world_size % (tp * pp):
        raise PrunedConfig("search_space", f"tp={tp} * pp={pp} = {tp * pp} does not divide world_size={world_size}")
    if study.tp_within_node and tp > spec.gpus_per_node:
        raise PrunedConfig("tp_within_node", f"tp={tp} > gpus_per_node={spec.gpus_per_node}: the tensor-parallel group would span nodes")
    dp = world_size // (tp * pp)
    per_step = micro_batch * dp
    if study.global_batch % per_step:
        raise PrunedConfig(
            "global_batch", f"global_batch={study.global_batch} is not a multiple of micro_batch={micro_batch} * dp={dp} = {per_step}"
        )
    accum = study.global_batch // per_step
    if accum > 1 and study.flag("accum") is None:
        raise PrunedConfig("flags", f"accum={accum} needed but the script has no accumulation flag (flags['accum'] is None)")
    resolved = {
        **config, "cluster": candidate_cluster.name, "nodes": nodes, "gpus_per_node": spec.gpus_per_node,
        "world_size": world_size, "tp": tp, "pp": pp, "dp": dp, "micro_batch": micro_batch, "accum": accum,
    }
    if apply_check and study.check is not None:
        reason = study.check(dict(resolved))
        if reason:
            raise PrunedConfig("check", str(reason))
    return Candidate(
        cluster=spec,
        tp=tp,
        pp=pp,
        dp=dp,
        micro_batch=micro_batch,
        accum=accum,
        dp_mode=config.get("dp_mode"),
        argv=script_argv(study, config, accum),
        config=resolved,
    )


def script_argv(study: Study, config: Mapping[str, Any], accum: int, depth: int | None = None) -> tuple[str, ...]:
    """The script's arguments: the study's fixed ones (the depth after `study.depth_flag` replaced by
    `depth` when given), then each searched value as its flag.

    Searched values follow in key order. Layout dimensions use `study.flags` (`micro_batch` ->
    `--batch`; `pp_schedule` only when pp > 1); `accum` is always passed when the script has the flag; any other key `name` becomes `--name` with underscores as dashes. A True
    value passes the bare flag, False or None passes nothing.
    """
    argv = list(study.script_args if depth is None else with_depth(study.script_args, study.depth_flag, depth))
    values = {k: v for k, v in config.items() if k not in LAUNCH_DIMENSIONS}
    if int(config.get("pp", 1)) == 1:  # a schedule means nothing without stages: one argv, one cache entry
        values.pop("pp_schedule", None)
    if study.flag("accum") is not None:
        values["accum"] = accum
    for name, value in sorted(values.items()):  # sorted: one argv (and one cache key) per configuration
        flag = study.flag(name) if name in LAYOUT_DIMENSIONS or name == "accum" else "--" + name.replace("_", "-")
        if flag is None or value is None or value is False:
            continue
        argv.append(flag)
        if value is not True:
            argv.append(str(value))
    return tuple(argv)
