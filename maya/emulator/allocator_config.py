"""`AllocatorConfig`: the caching-allocator settings of `PYTORCH_ALLOC_CONF` / `PYTORCH_CUDA_ALLOC_CONF`.

Parsed as PyTorch 2.9+ parses them (c10/core/AllocatorConfig.cpp), for the keys that change what the
allocator reserves or when it runs out of memory:
- `expandable_segments:True|False`: one segment per pool and stream that grows by mapping pages;
- `max_split_size_mb:N` (N >= 20): blocks of N MiB or more are never split, and a request reuses one only
  within `max_non_split_rounding_mb` (default 20) of its size;
- `roundup_power2_divisions:N` or `:[256:1,512:2,>:8]`: request sizes round up to one of N steps per
  power-of-two interval (the list form gives N per interval, keyed by MiB);
- `garbage_collection_threshold:T` (0 < T < 1): with a memory fraction set, cached segments unused the
  longest are released once reserved memory passes T of the cap;
- `per_process_memory_fraction:F`: the cap `torch.cuda.set_per_process_memory_fraction` sets.
Keys that change nothing Maya accounts for (pinned host memory, the allocator lock) are accepted. Other
keys, `backend:cudaMallocAsync` among them, are returned as not emulated, for the run's warning.
A bad value raises ValueError naming the setting, as PyTorch raises when it reads one.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

MIB = 1 << 20
LARGE_BUFFER_MB = 20
INTERVALS = 16
"""roundup_power2_divisions intervals: [1, 2) MiB and below, [2, 4) MiB, ..., 32 GiB and above."""

ENV_KEYS = ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")
"""Read in this order: the first set wins (PyTorch 2.9+ reads the generic name first)."""

NO_ACCOUNTING_EFFECT = frozenset({
    "release_lock_on_cudamalloc", "pinned_use_cuda_host_register", "pinned_num_register_threads",
    "pinned_use_background_threads", "pinned_reserve_segment_size_mb", "graph_capture_record_stream_reuse",
})


@dataclass(frozen=True, slots=True)
class AllocatorConfig:
    expandable_segments: bool = False
    max_split_size: int | None = None
    """Bytes; None: unlimited (PyTorch's SIZE_MAX), every block may be split."""
    max_non_split_rounding: int = LARGE_BUFFER_MB * MIB
    roundup_divisions: tuple[int, ...] = (0,) * INTERVALS
    garbage_collection_threshold: float = 0.0
    memory_fraction: float | None = None

    def divisions(self, size: int) -> int:
        """The roundup_power2_divisions that apply to a request of `size` bytes."""
        log2 = size.bit_length() - 1
        return self.roundup_divisions[min(max(log2 - 20, 0), INTERVALS - 1)]


DEFAULT = AllocatorConfig()


def _power_of_two(text: str, key: str, allow_zero: bool) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"allocator setting {key}: {text!r} is not an integer") from None
    if (value == 0 and allow_zero) or (value > 0 and value & (value - 1) == 0):
        return value
    raise ValueError(f"allocator setting {key}: {value} must be a power of two" + (" or 0" if allow_zero else ""))


def _roundup(value: str) -> tuple[int, ...]:
    key = "roundup_power2_divisions"
    if not value.startswith("["):
        return (_power_of_two(value, key, allow_zero=False),) * INTERVALS
    if not value.endswith("]"):
        raise ValueError(f"allocator setting {key}: {value!r} has no closing ']'")
    table = [0] * INTERVALS
    last = None
    for entry in filter(None, (e.strip() for e in value[1:-1].split(","))):
        bound, sep, divs = entry.partition(":")
        if not sep:
            raise ValueError(f"allocator setting {key}: entry {entry!r} is not BOUND_MB:DIVISIONS")
        n = _power_of_two(divs.strip(), key, allow_zero=True)
        if bound.strip() == ">":
            start = 0 if last is None else last + 1
            table[start:] = [n] * (INTERVALS - start)
            continue
        mb = _power_of_two(bound.strip(), key, allow_zero=False)
        index = min(mb.bit_length() - 1, INTERVALS - 1)
        if last is None:
            table[:index] = [n] * index
        table[index] = n
        last = index
    return tuple(table)


def _bool(value: str, key: str) -> bool:
    if value not in ("True", "False"):
        raise ValueError(f"allocator setting {key}: expected True or False, got {value!r}")
    return value == "True"


def _items(text: str) -> list[tuple[str, str]]:
    """`key:value` pairs split at the commas outside brackets."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text + ","):
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            item = text[start:i].strip()
            start = i + 1
            if item:
                key, _, value = item.partition(":")
                items.append((key.strip(), value.strip()))
    return items


def parse(text: str, base: AllocatorConfig = DEFAULT) -> tuple[AllocatorConfig, list[str]]:
    """Apply one settings string over `base`; returns the new config and the `key:value` items not emulated.

    As in PyTorch, each parse starts max_split_size, the roundup divisions and the garbage-collection
    threshold from their defaults; expandable segments and the other keys keep what `base` had.
    """
    fields = {"max_split_size": None, "roundup_divisions": DEFAULT.roundup_divisions,
              "garbage_collection_threshold": 0.0}
    ignored = []
    for key, value in _items(text or ""):
        if key == "expandable_segments":
            fields["expandable_segments"] = _bool(value, key)
        elif key in ("max_split_size_mb", "max_non_split_rounding_mb"):
            try:
                mb = int(value)
            except ValueError:
                raise ValueError(f"allocator setting {key}: {value!r} is not an integer") from None
            if mb < LARGE_BUFFER_MB:
                raise ValueError(f"allocator setting {key}: {mb} MiB is below the {LARGE_BUFFER_MB} MiB minimum")
            fields["max_split_size" if key == "max_split_size_mb" else "max_non_split_rounding"] = mb * MIB
        elif key == "roundup_power2_divisions":
            fields["roundup_divisions"] = _roundup(value)
        elif key in ("garbage_collection_threshold", "per_process_memory_fraction"):
            try:
                number = float(value)
            except ValueError:
                raise ValueError(f"allocator setting {key}: {value!r} is not a number") from None
            if key == "garbage_collection_threshold" and not 0 < number < 1:
                raise ValueError(f"allocator setting {key}: {number} must be between 0 and 1 (exclusive)")
            if key == "per_process_memory_fraction" and not 0 <= number <= 1:
                raise ValueError(f"allocator setting {key}: {number} must be between 0 and 1")
            fields["garbage_collection_threshold" if key == "garbage_collection_threshold" else "memory_fraction"] = number
        elif key not in NO_ACCOUNTING_EFFECT:
            ignored.append(f"{key}:{value}" if value else key)
    return dataclasses.replace(base, **fields), ignored


def environment_text(environ: dict[str, str] | None = None) -> str:
    """The settings the environment gives: PYTORCH_ALLOC_CONF, else PYTORCH_CUDA_ALLOC_CONF, else none."""
    env = os.environ if environ is None else environ
    return next((env[k] for k in ENV_KEYS if env.get(k)), "")


def environment_settings(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The allocator variables this environment sets, to hand to Ray workers (`runtime_env` env_vars)."""
    env = os.environ if environ is None else environ
    return {k: env[k] for k in ENV_KEYS if k in env}


def from_environment(environ: dict[str, str] | None = None) -> tuple[AllocatorConfig, list[str]]:
    """The config the process's environment asks for, and its items not emulated."""
    return parse(environment_text(environ))
