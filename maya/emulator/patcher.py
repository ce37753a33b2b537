"""`Patcher`: replaces attributes for the length of an emulation and puts every one back."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from typing import Any

_MISSING = object()


class Patcher:
    """Records each `setattr` it makes so that `restore()` undoes them in reverse order.

    A replaced TorchScript builtin (`torch.tensor`, `torch.batch_norm`, ...) stays one: TorchScript
    finds builtins by the identity of the Python function, and a function it does not know it tries
    to compile, so scripted code that called the original (DeBERTa-v2's `torch.jit.script` helpers
    call `torch.tensor`) failed to compile once Maya's replacement stood in its place. The
    replacement is registered under the original's builtin name for the length of the emulation;
    scripted code then calls the aten op, which Maya's dispatch modes still see.
    """

    def __init__(self) -> None:
        self._saved: list[tuple[Any, str, Any]] = []
        self._cleanups: list = []
        self._builtins: list[Any] = []

    def add_cleanup(self, fn) -> None:
        """Run `fn()` during `restore()`, before the attributes are put back."""
        self._cleanups.append(fn)

    def set(self, owner: Any, name: str, value: Any) -> None:
        """Set `owner.name = value`, remembering the previous value (or its absence)."""
        previous = owner.__dict__.get(name, _MISSING) if isinstance(owner, type) else getattr(owner, name, _MISSING)
        self._saved.append((owner, name, previous))
        builtin = _builtin_name(previous)
        if builtin is not None and _builtin_name(value) is None:
            _builtin_table()[id(value)] = builtin
            self._builtins.append(value)
        setattr(owner, name, value)

    def after_import(self, module_name: str, fn) -> None:
        """Call `fn(module)` once `module_name` is imported: now if it is, else when it gets imported
        during the emulation (a module too slow to import in every emulation that few scripts use)."""
        module = sys.modules.get(module_name)
        if module is not None:
            fn(module)
            return
        finder = _AfterImport(module_name, fn)
        sys.meta_path.insert(0, finder)
        self.add_cleanup(lambda: sys.meta_path.remove(finder) if finder in sys.meta_path else None)

    def restore(self) -> None:
        """Undo every patch, newest first."""
        while self._cleanups:
            self._cleanups.pop()()
        while self._builtins:  # before the replacement can die and its id name another object
            _builtin_table().pop(id(self._builtins.pop()), None)
        while self._saved:
            owner, name, previous = self._saved.pop()
            if previous is _MISSING:
                try:
                    delattr(owner, name)
                except AttributeError:
                    pass
            else:
                setattr(owner, name, previous)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: runs a callback on one module right after the real loader executes it."""

    def __init__(self, module_name: str, fn) -> None:
        self.module_name = module_name
        self.fn = fn

    def find_spec(self, fullname, path, target=None):
        if fullname != self.module_name:
            return None
        sys.meta_path.remove(self)  # once, and not for the lookup below
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        loader, fn = spec.loader, self.fn

        class _Loader(importlib.abc.Loader):
            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                loader.exec_module(module)
                fn(module)

        spec.loader = _Loader()
        return spec


def _builtin_table() -> dict[int, str]:
    from torch.jit._builtins import _get_builtin_table

    return _get_builtin_table()


def _builtin_name(fn: Any) -> str | None:
    """The aten name TorchScript calls `fn` by, or None."""
    if fn is _MISSING:
        return None
    try:
        return _builtin_table().get(id(fn))
    except ImportError:  # a torch without TorchScript
        return None
