"""Maya: predict a PyTorch training job's time, memory and cost on a GPU cluster from CPUs."""

from __future__ import annotations

__all__ = ["ScriptModule", "emulate", "mark_iteration", "simulate_trace_dir", "tune"]
__version__ = "0.1.0"


def __getattr__(name: str):
    # Lazy: `import maya` stays cheap and torch-free until an entry point is used.
    if name == "emulate":
        from maya.api import emulate

        return emulate
    if name == "ScriptModule":
        from maya.emulator.runner import ScriptModule

        return ScriptModule
    if name == "mark_iteration":
        from maya.emulator.session import mark_iteration

        return mark_iteration
    if name == "simulate_trace_dir":
        from maya.resimulate import simulate_trace_dir

        return simulate_trace_dir
    if name == "tune":
        # The package maya.tune is callable as the function maya.tune.api.tune (see its docstring).
        import maya.tune

        return maya.tune
    raise AttributeError(f"module 'maya' has no attribute {name!r}")
