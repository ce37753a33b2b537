"""`runs_on_host`: which CPU ops the emulator runs for real instead of faking.

Fake tensors have no data, which is right for GPU tensors and for the large CPU tensors of a model
built on the host (a 70B model's CPU weights would not fit). But scripts and libraries also build
small CPU tensors whose *values* matter: DeviceMesh lays out ranks with `torch.arange(world_size)`,
data pipelines index with CPU tensors, schedules read CPU counters. So an op runs for real when it
only touches real CPU tensors of at most `HOST_REAL_MAX_NUMEL` elements each, or is a CPU factory
making one that small. Everything else stays fake.

A CPU permutation or range of indices (`randperm`, `arange`) runs for real up to
`HOST_INDEX_MAX_NUMEL` elements: a shuffling sampler draws `torch.randperm(len(dataset)).tolist()`
over datasets of millions of samples (PyTorch's RandomSampler and DistributedSampler, Megatron's
mock dataset), and faked it gave a placeholder read per sample, which ran into the emulator's bound
on them; a dataset's indices are no model-sized tensor.
"""

from __future__ import annotations

import math

import torch
from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily

HOST_REAL_MAX_NUMEL = 1 << 16
"""Largest CPU tensor (elements) that is computed for real."""
HOST_INDEX_MAX_NUMEL = 1 << 26
"""Largest CPU `randperm` / `arange` (elements) made for real (512 MiB of int64)."""

aten = torch.ops.aten

_SIZE_FACTORIES = frozenset({
    aten.empty.memory_format, aten.zeros.default, aten.ones.default, aten.full.default, aten.rand.default,
    aten.randn.default, aten.empty_strided.default, aten.rand.generator, aten.randn.generator,
})
"""Factories whose first argument is the output size (the `.generator` overloads: given a host
`torch.Generator`, as `random_split` and seeded samplers do)."""
_RANDINT = frozenset({aten.randint.default, aten.randint.low, aten.randint.generator, aten.randint.low_generator})
_INDEX_FACTORIES = frozenset({aten.randperm.default, aten.randperm.generator, aten.arange.default, aten.arange.start,
                              aten.arange.start_step})
"""Factories of dataset indices (`HOST_INDEX_MAX_NUMEL`)."""


def _factory_numel(func, args: tuple) -> int | None:
    if func in _SIZE_FACTORIES:
        return math.prod(args[0])
    if func in _RANDINT:
        return math.prod(args[-1])
    if func is aten.arange.default:
        return math.ceil(float(args[0]))
    if func is aten.arange.start:
        return math.ceil(float(args[1]) - float(args[0]))
    if func is aten.arange.start_step:
        return math.ceil((float(args[1]) - float(args[0])) / float(args[2]))
    if func is aten.randperm.default or func is aten.randperm.generator:
        return int(args[0])
    if func is aten.scalar_tensor.default:
        return 1
    return None


def _real_small_cpu(t: torch.Tensor) -> bool:
    return not isinstance(t, FakeTensor) and t.device.type == "cpu" and t.numel() <= HOST_REAL_MAX_NUMEL


def runs_on_host(func, args: tuple, kwargs: dict) -> bool:
    """Whether `func(*args, **kwargs)` should run for real on the CPU (see the module docstring)."""
    device = kwargs.get("device")
    if device is not None and torch.device(device).type != "cpu":
        return False
    saw_tensor = False
    for a in args:
        if isinstance(a, torch.Tensor):
            if not _real_small_cpu(a):
                return False
            saw_tensor = True
        elif isinstance(a, torch.device) and a.type != "cpu":  # passed by position (a nested tensor's constructor)
            return False
        elif isinstance(a, (list, tuple)) and a and isinstance(a[0], torch.Tensor):
            for t in a:
                if isinstance(t, torch.Tensor) and not _real_small_cpu(t):
                    return False
            saw_tensor = True
    for a in kwargs.values():
        if isinstance(a, torch.Tensor):
            if not _real_small_cpu(a):
                return False
            saw_tensor = True
    if saw_tensor:
        return True
    try:
        numel = _factory_numel(func, args)
    except (TypeError, ValueError, IndexError):
        return False
    return numel is not None and numel <= (HOST_INDEX_MAX_NUMEL if func in _INDEX_FACTORIES else HOST_REAL_MAX_NUMEL)


def host_ints(lengths) -> list[int] | None:
    """The values of an int list or a real host tensor; None for a fake tensor or one without data."""
    if isinstance(lengths, (list, tuple)):
        return [int(v) for v in lengths]
    if isinstance(lengths, FakeTensor) or lengths.device.type != "cpu":
        return None
    try:
        with unset_fake_temporarily():  # read outside the fake mode, which would fake the read too
            return [int(v) for v in lengths.reshape(-1).tolist()]
    except RuntimeError:  # "tolist() shouldn't be called on a tensor with unallocated storage"
        return None
