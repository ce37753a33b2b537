"""Memory dominance: a configuration that needs at least the memory per GPU of one already found over
memory is infeasible, and is not emulated.

In a study of a 70B-class model most configurations do not fit, and emulating one costs as much as
emulating one that does (benchmarks/results/tune_throughput_llama_before_dominance.json: 38 such
emulations took 2,343 of 3,540 trial-seconds of a 30-minute study; with this module,
tune_throughput_llama.json, 9 of 47 were ruled out here). Configuration B is *dominated* by an
over-memory configuration A when B differs from A only in ways that never lower the memory a GPU needs:

- a GPU with at most A's memory (the same GPU type, in practice);
- a micro-batch at least as large: every forward keeps more activations; with a fixed global batch
  there are fewer micro-batches, but a pipeline keeps min(pp, accum) * micro_batch samples in flight
  (and its last stage every micro-batch's output, accum * micro_batch samples), never fewer;
- a data-parallel degree at most as large: each rank holds a larger shard under FSDP (the same
  replica under DDP) and more samples per step (global_batch / dp), so no fewer micro-batches;
- for every dimension of the study's `memory_order`, a value at least as far along that order
  (`{"checkpoint": ["full", "none"]}`: no checkpointing after checkpointing);
- the same value of every other searched dimension: tp, pp, the schedule, dp_mode, script flags.
  Only the cluster and node count (through dp) may differ otherwise.

B is then reported infeasible with A named in its reason, and `CacheUse.DOMINATED` (B equal to A, on
another price say, is left to the trace cache, whose entry holds A's own figures; unless A's verdict
came from a rank check that stopped an emulation part-way, `maya.tune.rank_memory_check`, which
leaves no cache entry: then B equal to A is dominated too). This assumes the
script's memory behaves as above; a script whose memory falls with a larger micro-batch should set
`memory_dominance = False` in its study.

Over-memory configurations are recorded in the trace cache's directory (one JSON line each, in a file
per script and study settings that decide memory), so trials on every process and node that share the
cache, and a resumed study, see them.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from maya.tune.candidate import Candidate
from maya.tune.study import DECREASING, INCREASING, LAUNCH_DIMENSIONS, Study
from maya.tune.trace_cache import EMULATION_CODE, code_fingerprint, digest, file_sha256

BUILTIN_ORDER: Mapping[str, Any] = {"micro_batch": INCREASING}
"""Dimensions whose memory order Maya knows for any training script."""


def memory_file(study: Study, cache_root: str | os.PathLike) -> Path:
    """The record file of `study` under the trace cache `cache_root`: one per script content, fixed
    arguments, global batch, flags and memory limit (what decides whether a configuration fits), and
    the emulator's code (`trace_cache.code_fingerprint`: another Maya's records are not read back)."""
    payload = {
        "emulator_code": code_fingerprint(EMULATION_CODE),
        "script_sha256": file_sha256(study.script), "script_args": list(study.script_args),
        "global_batch": study.global_batch, "flags": dict(study.flags), "max_memory_fraction": study.max_memory_fraction,
        "memory_order": {k: v if isinstance(v, str) else list(v) for k, v in memory_order(study).items()},
    }
    return Path(cache_root) / f"over_memory-{digest(payload)}.jsonl"


def memory_order(study: Study) -> dict[str, Any]:
    """The study's `memory_order` with Maya's built-in dimensions (the study's entries win)."""
    return {**BUILTIN_ORDER, **dict(study.memory_order or {})}


def record(study: Study, candidate: Candidate, reason: str, path: Path, *, uncached: bool = False) -> None:
    """Note in the record file `path` (`memory_file`) that `candidate` did not fit (why: `reason`);
    `uncached`: no trace-cache entry holds that verdict (see the module docstring)."""
    row = {
        "config": _layout(study, candidate),
        "dp": candidate.dp, "gpu": candidate.cluster.gpu,
        "gpu_memory_bytes": candidate.cluster.gpu_spec.total_memory_bytes, "reason": reason,
        "uncached": uncached,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # one whole line per writer
        f.write(json.dumps(row, default=str) + "\n")


def dominating(study: Study, candidate: Candidate, path: Path) -> str | None:
    """The reason `candidate` cannot fit, naming a configuration of the record file `path`
    (`memory_file`) that needs no more memory per GPU than it does; None when none does."""
    if not path.is_file():
        return None
    order, mine = memory_order(study), _layout(study, candidate)
    for line in path.read_text().splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:  # a line being written right now
            continue
        if dominates(row, mine, candidate, order):
            settings = " ".join(f"{k}={v}" for k, v in sorted(row["config"].items()))
            return (f"needs at least the memory per GPU of {settings} dp={row['dp']} on {row['gpu']}, "
                    f"which did not fit: {row['reason']}")
    return None


def dominates(row: Mapping[str, Any], layout: Mapping[str, Any], candidate: Candidate, order: Mapping[str, Any]) -> bool:
    """Whether the over-memory `row` (`record`'s) needs no more memory per GPU than `candidate`, whose
    searched values are `layout` (the rules of this module's docstring)."""
    if candidate.cluster.gpu_spec.total_memory_bytes > row["gpu_memory_bytes"] or candidate.dp > row["dp"]:
        return False
    if set(layout) != set(row["config"]):
        return False
    if candidate.dp == row["dp"] and candidate.cluster.gpu == row["gpu"] and layout == row["config"]:
        return bool(row.get("uncached"))  # the same configuration (another price): the trace cache's verdict, if it has one
    return all(_at_least(layout[name], theirs, order[name]) if name in order else layout[name] == theirs
               for name, theirs in row["config"].items())


def _layout(study: Study, candidate: Candidate) -> dict[str, Any]:
    """The searched values of `candidate` besides the cluster and node count; without a pipeline,
    without the schedule (it means nothing then: `maya.tune.candidate.script_argv` drops it too)."""
    layout = {k: v for k, v in candidate.config.items() if k in study.search_space and k not in LAUNCH_DIMENSIONS}
    if candidate.pp == 1:
        layout.pop("pp_schedule", None)
    return layout


def _at_least(value: Any, other: Any, order: Any) -> bool:
    """Whether `value` lies at least as far along `order` as `other` (False when either is off it)."""
    if order in (INCREASING, DECREASING):
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (value, other)):
            return False
        return value >= other if order == INCREASING else value <= other
    values = list(order)
    return value in values and other in values and values.index(value) >= values.index(other)
