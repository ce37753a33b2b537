"""`load_study`: read a `maya tune` config file (plain Python, module-level fields) into a `Study`.

A config file is an ordinary Python module; each field is a top-level name:

    from ray import tune

    script = "train_gpt.py"                       # relative to this file
    script_args = ["--steps", "3", "--seq", "1024"]
    search_space = {"micro_batch": tune.choice([8, 16, 32]), "checkpoint": tune.choice(["none", "nonreentrant"])}
    global_batch = 32                             # samples per optimizer step
    train_steps = 5000                            # or train_tokens = ... with tokens_per_sample = ...
    clusters = [{"preset": "dgx-h200", "gpus_per_node": 1, "nodes": [1], "price_per_gpu_hour_usd": 3.5}]

Optional fields are those of `Study` (objective, search, num_samples, max_gpus, flags, check, ...).
Every mistake (a syntax error, an exception while the file runs, a missing or misspelt field, a
wrong type, a space that cannot run) raises `ConfigError`, which names the file, the line or field,
and the reason, before any Ray work starts.
"""

from __future__ import annotations

import difflib
import os
import traceback
import types
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from maya.tune.preflight import preflight
from maya.tune.study import ClusterCandidate, Study, StudyFieldError, resolve_host_profiles

REQUIRED_FIELDS: tuple[str, ...] = ("script", "search_space", "global_batch", "clusters")
OPTIONAL_FIELDS: tuple[str, ...] = tuple(
    f.name for f in fields(Study) if f.name not in REQUIRED_FIELDS
)
_CLUSTER_KEYS = ("preset", "nodes", "gpus_per_node", "price_per_gpu_hour_usd", "label")


class ConfigError(ValueError):
    """A config file that cannot become a study: `path`, then `line` or `field`, and `reason`."""

    def __init__(self, path: str | os.PathLike, reason: str, *, field: str | None = None, line: int | None = None) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: field '{field}': {reason}" if field else f"{where}: {reason}")
        self.path = str(path)
        self.field = field
        self.line = line
        self.reason = reason


def load_study(path: str | os.PathLike, *, check_space: bool = True) -> Study:
    """Run a config file and build its `Study`; with `check_space`, also run `preflight` on it.

    Raises:
        ConfigError: the file is missing, does not parse or run, or declares a study that cannot work.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(path, "config file not found")
    namespace = _run(path)
    missing = [name for name in REQUIRED_FIELDS if name not in namespace]
    if "train_steps" not in namespace and "train_tokens" not in namespace:
        missing.append("train_steps")
    if missing:
        hint = _misspelt(namespace, missing[0])
        raise ConfigError(path, f"missing (required: {', '.join(REQUIRED_FIELDS)}, and train_steps or train_tokens){hint}", field=missing[0])
    for name in namespace:
        if name not in REQUIRED_FIELDS + OPTIONAL_FIELDS and not name.startswith("_") and _is_data(namespace[name]):
            close = difflib.get_close_matches(name, REQUIRED_FIELDS + OPTIONAL_FIELDS, n=1, cutoff=0.8)
            if close:
                raise ConfigError(path, f"unknown field; did you mean '{close[0]}'?", field=name)
    try:
        study = Study(**_study_kwargs(path, namespace))
        if check_space:
            preflight(study)
    except StudyFieldError as e:
        raise ConfigError(path, e.reason, field=e.field) from None
    return study


def _run(path: Path) -> dict[str, Any]:
    source = path.read_text()
    try:
        code = compile(source, str(path), "exec")
    except SyntaxError as e:
        raise ConfigError(path, f"syntax error: {e.msg}", line=e.lineno) from None
    namespace: dict[str, Any] = {"__file__": str(path), "__name__": "__maya_tune_config__"}
    try:
        exec(code, namespace)
    except Exception as e:
        frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == str(path)]
        line = frames[-1].lineno if frames else None
        raise ConfigError(path, f"{type(e).__name__} while running the config: {e}", line=line) from None
    return {k: v for k, v in namespace.items() if not k.startswith("__")}


def _is_data(value: Any) -> bool:
    return not isinstance(value, (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType))


def _misspelt(namespace: dict, wanted: str) -> str:
    close = difflib.get_close_matches(wanted, list(namespace), n=1, cutoff=0.8)
    return f"; '{close[0]}' is defined: a misspelling?" if close else ""


def _study_kwargs(path: Path, ns: dict[str, Any]) -> dict[str, Any]:
    kwargs = {k: ns[k] for k in REQUIRED_FIELDS + OPTIONAL_FIELDS if k in ns}
    script = ns["script"]
    if not isinstance(script, (str, os.PathLike)):
        raise StudyFieldError("script", f"must be a path, got {type(script).__name__}")
    script = Path(script)
    kwargs["script"] = script if script.is_absolute() else (path.parent / script).resolve()
    kwargs["script_args"] = _script_args(ns.get("script_args", ()))
    if not isinstance(ns["search_space"], Mapping):
        raise StudyFieldError("search_space", f"must be a dict of name -> tune domain, got {type(ns['search_space']).__name__}")
    kwargs["clusters"] = tuple(cluster_candidate(c) for c in _as_list("clusters", ns["clusters"]))
    for name in ("global_batch", "train_steps", "train_tokens", "tokens_per_sample", "num_samples", "max_gpus", "seed", "top_k"):
        if name in ns and ns[name] is not None and (not isinstance(ns[name], int) or isinstance(ns[name], bool)):
            raise StudyFieldError(name, f"must be an integer, got {ns[name]!r}")
    if "host_profiles" in ns:
        kwargs["host_profiles"] = resolve_host_profiles(ns["host_profiles"], path.parent)
    if "flags" in ns and not isinstance(ns["flags"], Mapping):
        raise StudyFieldError("flags", f"must be a dict of dimension -> flag, got {type(ns['flags']).__name__}")
    return kwargs


def _script_args(value: Any) -> tuple[str, ...]:
    """A list of strings as given, or a dict {"steps": 3} as ["--steps", "3"]."""
    if isinstance(value, Mapping):
        args: list[str] = []
        for name, v in value.items():
            args.append("--" + str(name).replace("_", "-"))
            if v is not True:
                args.append(str(v))
        return tuple(args)
    if isinstance(value, (list, tuple)) and all(isinstance(a, (str, int, float)) for a in value):
        return tuple(str(a) for a in value)
    raise StudyFieldError("script_args", f"must be a list of strings or a dict of flag -> value, got {value!r}")


def _as_list(name: str, value: Any) -> list:
    if isinstance(value, (list, tuple)):
        return list(value)
    raise StudyFieldError(name, f"must be a list, got {type(value).__name__}")


def cluster_candidate(value: Any) -> ClusterCandidate:
    """A candidate from a preset name, a dict of `ClusterCandidate` fields, or a `ClusterCandidate`."""
    if isinstance(value, ClusterCandidate):
        return value
    if isinstance(value, str):
        return ClusterCandidate(preset=value)
    if not isinstance(value, Mapping):
        raise StudyFieldError("clusters", f"each entry must be a preset name or a dict, got {value!r}")
    unknown = sorted(set(value) - set(_CLUSTER_KEYS))
    if unknown or "preset" not in value:
        raise StudyFieldError("clusters", f"entry {dict(value)}: needs 'preset'; known keys {list(_CLUSTER_KEYS)}, unknown {unknown}")
    nodes = value.get("nodes", (1,))
    nodes = tuple(nodes) if isinstance(nodes, (list, tuple, range)) else (nodes,)
    return ClusterCandidate(**{**value, "nodes": nodes})
