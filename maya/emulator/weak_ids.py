"""`WeakIdMap`: values keyed by a tensor's identity, each entry gone when its tensor dies.

Fake tensors are not hashable by value and must not be kept alive by a side table (their emulated
memory is freed when they die), so the emulator's side tables key on `id()` and hold a weak reference
that both checks the key still names the same tensor and removes the entry with it.
"""

from __future__ import annotations

import weakref
from typing import Any


class WeakIdMap:
    """id(tensor) -> (weak reference, value); `get` answers only for the very tensor that was `set`."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref, Any]] = {}

    def get(self, t: object, default: Any = None) -> Any:
        entry = self._entries.get(id(t))
        return entry[1] if entry is not None and entry[0]() is t else default

    def set(self, t: object, value: Any = True) -> None:
        key, entries = id(t), self._entries
        entries[key] = (weakref.ref(t, lambda _ref: entries.pop(key, None)), value)

    def __bool__(self) -> bool:
        return bool(self._entries)
