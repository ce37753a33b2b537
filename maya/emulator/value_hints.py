"""`ValueHints`: what little the emulator knows about the values of fake tensors, for routing.

Fake tensors carry no data, so an op whose output *size* depends on values (`nonzero`,
`masked_select`, boolean indexing, `bincount`) or a host read (`.item()`) needs a placeholder.
Selecting every element is a safe upper bound, but it is badly wrong for the commonest case of
data-dependent sizes in training: a mixture-of-experts router. There each expert's tokens are
found with `torch.where(one_hot(topk_indices)[e])` or `nonzero(topk_indices == e)`, and selecting
every element sends every token to every expert (num_experts times the real work and memory).

The placeholder policy here is *uniform routing*: integer indices produced by `topk`, `sort`,
`argmax`, `argmin` and `max/min(dim)` over a dimension of size C are taken as uniformly spread
over [0, C). Three facts follow and are propagated through views, copies and dtype casts:
- `index_range`: an index tensor's values lie uniformly in [0, C);
- `density`: the fraction of nonzero elements of a 0/1 tensor (`indices == e` and one-hot
  masks: 1/C; `!=`: 1 - 1/C);
- `value`: the expected value of every element (a sum of a mask over n elements: n * density;
  `bincount` of indices: numel / C), answered by `.item()` and compared against scalars.
`nonzero` then returns round(numel * density) rows: top-k of E experts over N tokens gives each
expert N * k / E tokens, the mean load a balanced router reaches. A tensor with no hint keeps
the old placeholder (every element selected).
"""

from __future__ import annotations

import functools
import operator
import weakref
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily

aten = torch.ops.aten

EXACT_MAX_NUMEL = 1 << 16
"""Largest host tensor whose values a GPU copy keeps (as `host_tensors.HOST_REAL_MAX_NUMEL`)."""


@dataclass(frozen=True, slots=True)
class Hint:
    """What is assumed about one fake tensor's values."""

    index_range: int | None = None
    """Integer values assumed uniform over [0, index_range)."""
    density: float | None = None
    """Fraction of elements that are nonzero (for 0/1-valued tensors)."""
    value: float | None = None
    """Expected value of every element."""


INDEX_SOURCES = frozenset({"aten::topk", "aten::sort", "aten::sort.stable", "aten::argsort", "aten::argsort.stable",
                           "aten::argmax", "aten::argmin", "aten::max.dim", "aten::min.dim"})  # fmt: skip
"""Ops whose integer output indexes a dimension of their input: values uniform over that dimension."""

PRESERVING_OPS = frozenset({"aten::_to_copy", "aten::clone", "aten::contiguous", "aten::expand", "aten::repeat",
                            "aten::index.Tensor", "aten::index_select", "aten::detach", "aten::lift_fresh_copy"})  # fmt: skip
"""Non-view ops whose output values are (a uniform sample of) their first input's values."""

_COMPARE: dict[str, Callable[[float, float], bool]] = {
    "eq": operator.eq, "ne": operator.ne, "gt": operator.gt, "ge": operator.ge, "lt": operator.lt, "le": operator.le,
}  # fmt: skip
_SUMS = frozenset({"aten::sum", "aten::sum.dim_IntList", "aten::count_nonzero", "aten::count_nonzero.dim_IntList"})
"""Reductions that count the nonzero elements of a 0/1 tensor (and, for sums, add up expected values)."""


class ValueHints:
    """Hints about fake tensors' values, keyed by tensor identity; an entry dies with its tensor."""

    def __init__(self) -> None:
        self._hints: dict[int, tuple[weakref.ref, Hint]] = {}
        self._exact: dict[int, tuple[weakref.ref, torch.Tensor]] = {}
        """GPU tensors copied from small host tensors (`torch.tensor([...], device="cuda")`): their
        values, until an op writes to them. Shapes only read them (`total`, `distinct_count`)."""

    def exact(self, t: object) -> torch.Tensor | None:
        """The host copy of `t`'s values where they are known exactly, else None."""
        entry = self._exact.get(id(t))
        return entry[1] if entry is not None and entry[0]() is t else None

    def get(self, t: object) -> Hint | None:
        """The hint of tensor `t`, or None."""
        entry = self._hints.get(id(t))
        return entry[1] if entry is not None and entry[0]() is t else None

    def set(self, t: torch.Tensor, hint: Hint) -> None:
        key = id(t)
        hints = self._hints
        hints[key] = (weakref.ref(t, lambda _ref: hints.pop(key, None)), hint)

    def observe(self, name: str, func, args: tuple, kwargs: dict, out: object) -> None:
        """Derive the hints of `out` from the op and its inputs' hints (called after every op)."""
        first = args[0] if args else None
        if self._exact and id(first) in self._exact and _writes_first(func):
            self._exact.pop(id(first), None)
        if name == "aten::_to_copy" and _small_host(first) and isinstance(out, FakeTensor):
            key, exact = id(out), self._exact
            with unset_fake_temporarily():
                exact[key] = (weakref.ref(out, lambda _ref: exact.pop(key, None)), first.clone())
        if name in INDEX_SOURCES:
            self._index_source(name, args, kwargs, out)
            return
        if not self._hints or not isinstance(out, torch.Tensor):
            return
        hint = self.get(first)
        base = _base_name(name)
        if base in _COMPARE:
            self._compare(base, args, out)
        elif hint is None:
            return
        elif name in _SUMS:
            self._sum(name, hint, first, out)
        elif name in PRESERVING_OPS or _is_view(func):
            self.set(out, hint)
        elif name in ("aten::mean", "aten::mean.dim") and hint.density is not None:
            self.set(out, Hint(value=hint.density))
        elif name == "aten::histc" and hint.index_range:
            self.set(out, Hint(value=first.numel() / out.numel()))

    def selected_count(self, mask: torch.Tensor) -> int:
        """How many elements of `mask` a `nonzero` selects: numel * density, or every element."""
        hint = self.get(mask)
        if hint is None or hint.density is None:
            return mask.numel()
        return round(mask.numel() * hint.density)

    def total(self, t: torch.Tensor) -> int | None:
        """The sum of `t`'s values: exact for a copy of a small host tensor (`exact`), numel * its
        expected value for a hinted one (a `bincount` of routing
        indices), else None."""
        exact = self.exact(t)
        if exact is not None:
            with unset_fake_temporarily():
                return int(exact.sum())
        hint = self.get(t)
        if hint is None or hint.value is None:
            return None
        return round(hint.value * t.numel())

    def distinct_count(self, t: torch.Tensor) -> int:
        """How many distinct values `torch.unique` finds in `t`: exact for a copy of a host tensor, the index
        range for hinted indices (all of it, uniform routing reaching every choice), else every
        element (the upper bound a selection Maya knows nothing about gets)."""
        exact = self.exact(t)
        if exact is not None:
            with unset_fake_temporarily():
                return int(torch.unique(exact).numel())
        hint = self.get(t)
        if hint is not None and hint.index_range:
            return min(hint.index_range, t.numel())
        return t.numel()

    def item(self, t: torch.Tensor) -> float | int | bool | None:
        """The `.item()` of `t`: its value where known exactly (`exact`), else the placeholder from its
        hint, or None when there is neither."""
        exact = self.exact(t)
        if exact is not None and exact.numel() == 1:
            with unset_fake_temporarily():
                return exact.item()
        hint = self.get(t)
        if hint is None or hint.value is None:
            return None
        if t.dtype is torch.bool:
            return bool(hint.value)
        if t.is_floating_point():
            return float(hint.value)
        return round(hint.value)

    def bincount_size(self, x: torch.Tensor, minlength: int) -> int | None:
        """Length of `bincount(x, minlength)` when `x` holds hinted indices, else None."""
        hint = self.get(x)
        if hint is None or not hint.index_range:
            return None
        return max(hint.index_range, minlength)

    def note_bincount(self, x: torch.Tensor, out: torch.Tensor) -> None:
        hint = self.get(x)
        if hint is not None and hint.index_range:
            self.set(out, Hint(value=x.numel() / hint.index_range))

    def _index_source(self, name: str, args: tuple, kwargs: dict, out: object) -> None:
        x = args[0]
        indices = out[1] if isinstance(out, tuple) else out
        if not isinstance(indices, torch.Tensor) or indices.dtype not in (torch.int64, torch.int32):
            return
        if name in ("aten::argmax", "aten::argmin"):
            dim = args[1] if len(args) > 1 else kwargs.get("dim")
        elif name == "aten::topk":
            dim = args[2] if len(args) > 2 else kwargs.get("dim", -1)
        elif name in ("aten::sort.stable", "aten::argsort.stable"):
            dim = kwargs.get("dim", -1)
        else:
            dim = args[1] if len(args) > 1 else kwargs.get("dim", -1)
        if dim is None:
            size = x.numel()
        elif x.dim() == 0:
            size = 1
        else:
            size = x.shape[dim]
        self.set(indices, Hint(index_range=int(size)))

    def _compare(self, base: str, args: tuple, out: torch.Tensor) -> None:
        a, b = args[0], args[1] if len(args) > 1 else None
        ha, hb = self.get(a), self.get(b)
        hint, other = (ha, b) if ha is not None else (hb, a)
        if hint is None:
            return
        if hint.index_range and base in ("eq", "ne"):
            p = 1.0 / hint.index_range
            self.set(out, Hint(density=p if base == "eq" else 1.0 - p))
        elif hint.value is not None and not isinstance(other, torch.Tensor) and isinstance(other, (int, float)):
            lhs, rhs = (hint.value, other) if ha is not None else (other, hint.value)
            self.set(out, Hint(density=float(_COMPARE[base](lhs, rhs))))

    def _sum(self, name: str, hint: Hint, x: torch.Tensor, out: torch.Tensor) -> None:
        per_output = x.numel() / max(out.numel(), 1)  # elements reduced into each output
        if hint.density is not None:
            self.set(out, Hint(value=hint.density * per_output))
        elif hint.value is not None and name.startswith("aten::sum"):
            self.set(out, Hint(value=hint.value * per_output))


@functools.cache
def _base_name(name: str) -> str:
    """`aten::eq.Scalar` -> `eq`."""
    return name.partition("::")[2].partition(".")[0]


@functools.cache
def _is_view(func) -> bool:
    returns = func._schema.returns
    return bool(returns) and all(r.alias_info is not None and not r.alias_info.is_write for r in returns)


def _small_host(t: object) -> bool:
    """A real (not fake) host tensor small enough for its GPU copy to keep its values."""
    return (isinstance(t, torch.Tensor) and not isinstance(t, FakeTensor) and t.device.type == "cpu"
            and t.numel() <= EXACT_MAX_NUMEL)


@functools.cache
def _writes_first(func) -> bool:
    """Whether `func` writes to its first argument (in-place and out= ops)."""
    arguments = func._schema.arguments
    return bool(arguments) and arguments[0].alias_info is not None and arguments[0].alias_info.is_write
