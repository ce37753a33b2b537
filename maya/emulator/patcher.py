"""`Patcher`: replaces attributes for the length of an emulation and puts every one back."""

from __future__ import annotations

from typing import Any

_MISSING = object()


class Patcher:
    """Records each `setattr` it makes so that `restore()` undoes them in reverse order."""

    def __init__(self) -> None:
        self._saved: list[tuple[Any, str, Any]] = []
        self._cleanups: list = []

    def add_cleanup(self, fn) -> None:
        """Run `fn()` during `restore()`, before the attributes are put back."""
        self._cleanups.append(fn)

    def set(self, owner: Any, name: str, value: Any) -> None:
        """Set `owner.name = value`, remembering the previous value (or its absence)."""
        previous = owner.__dict__.get(name, _MISSING) if isinstance(owner, type) else getattr(owner, name, _MISSING)
        self._saved.append((owner, name, previous))
        setattr(owner, name, value)

    def restore(self) -> None:
        """Undo every patch, newest first."""
        while self._cleanups:
            self._cleanups.pop()()
        while self._saved:
            owner, name, previous = self._saved.pop()
            if previous is _MISSING:
                try:
                    delattr(owner, name)
                except AttributeError:
                    pass
            else:
                setattr(owner, name, previous)
