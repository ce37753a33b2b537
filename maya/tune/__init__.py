"""Configuration search: Ray Tune + HyperOpt over training configurations, a cost objective and a trace cache.

    maya tune examples/tune_gpt.py                  # CLI: a config file, local Ray started if none
    maya.tune(search_space, script=..., ...)        # library: returns TuneResults

`maya.tune` is both this package and the function `tune`: the package is callable, so
`maya.tune(...)` works whether or not a submodule such as `maya.tune.study` was imported first
(importing a submodule sets the package as the attribute `maya.tune`).
"""

from __future__ import annotations

import sys
import types

__all__ = ["ClusterCandidate", "ConfigError", "Study", "StudyFieldError", "TuneResults", "load_study", "run_study", "tune"]

_EXPORTS = {
    "ClusterCandidate": "maya.tune.study",
    "Study": "maya.tune.study",
    "StudyFieldError": "maya.tune.study",
    "ConfigError": "maya.tune.config_file",
    "load_study": "maya.tune.config_file",
    "TuneResults": "maya.tune.results",
    "run_study": "maya.tune.runner",
    "tune": "maya.tune.api",
}


def __getattr__(name: str):
    # Lazy: importing maya.tune does not import Ray, torch or pandas.
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'maya.tune' has no attribute {name!r}")


class _CallableModule(types.ModuleType):
    def __call__(self, *args, **kwargs):
        from maya.tune.api import tune

        return tune(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
