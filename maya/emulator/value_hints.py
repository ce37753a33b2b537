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

aten = torch.ops.aten


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
        if name in INDEX_SOURCES:
            self._index_source(name, args, kwargs, out)
            return
        if not self._hints or not isinstance(out, torch.Tensor):
            return
        first = args[0] if args else None
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

    def item(self, t: torch.Tensor) -> float | int | bool | None:
        """The placeholder `.item()` of `t` from its hint, or None when there is none."""
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
