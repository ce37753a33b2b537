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
the old placeholder (every element selected), and so a count of it (`mask.sum()` of a boolean mask,
`count_nonzero`) is its size; the largest or smallest of elements sharing an expected value is that
value, and adding a Python number shifts it (Hugging Face beam search's output length:
`prompt_len + (beam_indices + 1).bool().sum(dim=1).max()`).

Some values are known exactly (`exact`): GPU copies of small host tensors, factories' (`ones`,
`full`, `arange`), and the small results of deterministic aten ops whose every fake input is known,
computed on the host with the same op, in place too (foreach ops included: an optimizer's step
counts). They answer `.item()` and give sizes. A write by an op on unknown values, or by a
collective (`written`), forgets every known tensor of that storage, views included. `isin` of
unknown values is known: no element is found (`ZERO_WHEN_UNKNOWN`), so Hugging Face `generate`'s stopping
flags stay computable and the loop ends at its length limit instead of never.
"""

from __future__ import annotations

import functools
import operator
import weakref
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily

from maya.emulator.attrs import flatten_tensors
from maya.emulator.weak_ids import WeakIdMap

aten = torch.ops.aten

EXACT_MAX_NUMEL = 1 << 16
"""Largest host tensor whose values a GPU copy keeps (as `host_tensors.HOST_REAL_MAX_NUMEL`)."""

COMPUTED_MAX_NUMEL = 1 << 12
"""Largest integer or boolean output of an op on the GPU whose values are computed (on the host) from
known inputs: the flags, counters and positions that steer a script's control flow."""

COMPUTED_MAX_FLOAT_NUMEL = 16
"""Largest floating-point output computed so: scalars (a loss scale), not weights or activations."""

FACTORIES = frozenset({"aten::ones", "aten::zeros", "aten::full", "aten::ones_like", "aten::zeros_like",
                       "aten::full_like", "aten::scalar_tensor", "aten::arange", "aten::arange.start",
                       "aten::arange.start_step"})  # fmt: skip
"""Ops that make a tensor whose values follow from their arguments alone."""

OUTPUT = -1
"""`ZERO_WHEN_UNKNOWN`'s position of an op's output."""

ZERO_WHEN_UNKNOWN: dict[str, int] = {
    "aten::isin.Tensor_Tensor": OUTPUT, "aten::isin.Tensor_Scalar": OUTPUT, "aten::isin.Scalar_Tensor": OUTPUT,
    "aten::_amp_foreach_non_finite_check_and_unscale_": 1,
    "aten::isnan": OUTPUT, "aten::isinf": OUTPUT, "aten::isposinf": OUTPUT, "aten::isneginf": OUTPUT,
}
"""Checks whose answer is taken to be all zeros where the values they check (the first argument) are
not known, and the position of the tensor that holds the answer (`OUTPUT`, or the argument written):
membership tests find no element (no generated token is an end-of-sequence token: generation runs to
its length limit), gradient unscaling finds nothing non-finite (GradScaler's flag stays 0 and its
scale grows as with finite gradients), and no value is NaN or infinite (`torch.isfinite`, which
PyTorch decomposes into comparisons, is answered all True by the emulation's patch of it). The
"nothing is wrong" placeholder, as `.item()`'s 0, taken by `ValueHints.assume` (values where small,
else a hint), so the answers compute on: DeepSpeed's overflow check
`isfinite(g.amax()).logical_and(isfinite(g.amin())).logical_not()`, summed over the gradients, reads 0,
so its step is not skipped; `isnan(g).sum()` counts none."""

AGREEING_REDUCTIONS = frozenset({"max", "min", "avg", "band", "bor"})
"""All-reduce ops whose result is every rank's value when the ranks agree. A collective forgets the
values it writes, except an all-reduce of these ops of values this rank knows, where every rank of
the group is taken to hold the same (the ranks of a rank class are alike), so a flag that ranks agree
on (DeepSpeed's overflow flag, all-reduced with MAX) stays known; and the root's own values of a
broadcast. A sum is not kept (a count that differs between ranks would be silently wrong), nor what
another rank broadcasts (`torch.tensor(n if rank == 0 else -1)` differs by rank), except where this
rank's own values are zeros: the "nothing is wrong" answer, which every rank then holds (FSDP1 sums
each rank's count of missing optimizer states and stops unless it is 0; Lightning broadcasts rank 0's
"received SIGTERM" flag before every batch and stops a rank that reads 1). Where the root's emulation
ran first and knew the values it broadcast, a non-root rank takes those instead (`set_exact`, from
`maya.emulator.nccl`'s broadcast publication: Megatron's train/valid/test flags)."""


@dataclass(frozen=True, slots=True)
class Hint:
    """What is assumed about one fake tensor's values."""

    index_range: int | None = None
    """Integer values assumed uniform over [0, index_range)."""
    density: float | None = None
    """Fraction of elements that are nonzero (for 0/1-valued tensors)."""
    value: float | None = None
    """Expected value of every element."""


EVERY_ELEMENT = Hint(density=1.0)
"""What a tensor with no hint amounts to when its elements are selected or counted (`selected_count`)."""

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

EXTREMES = frozenset({"aten::max", "aten::min", "aten::amax", "aten::amin"})
"""Reductions to the largest or smallest value, which keep an expected value every element shares."""

SHIFTS = frozenset({"aten::add.Tensor", "aten::add.Scalar", "aten::sub.Tensor", "aten::sub.Scalar"})
"""Ops that shift an expected value by a Python number (`prompt_len + generated_len`)."""


def _shifted(name: str, value: float, args: tuple, kwargs: dict) -> float | None:
    """`value` plus (or minus) the op's Python-number operand times its alpha, or None when the
    operand is a tensor."""
    other = args[1] if len(args) > 1 else kwargs.get("other")
    alpha = args[2] if len(args) > 2 else kwargs.get("alpha", 1)
    if isinstance(other, bool) or not isinstance(other, (int, float)) or not isinstance(alpha, (int, float)):
        return None
    return value + alpha * other if "add" in name else value - alpha * other


class ValueHints:
    """Hints about fake tensors' values, keyed by tensor identity; an entry dies with its tensor."""

    def __init__(self) -> None:
        self._hints = WeakIdMap()
        self._exact: dict[int, tuple[weakref.ref, torch.Tensor, int]] = {}
        """Fake tensors whose values are known, with a host copy of them and their storage: GPU
        copies of small host tensors (`torch.tensor([...], device="cuda")`), factories (`torch.ones`,
        `torch.full`, `torch.arange`) and small results of ops on known values (`computed`), until
        an op writes to their storage."""
        self._exact_storages: dict[int, set[int]] = {}
        """Storage -> the keys of `_exact` whose tensors it holds (a write to it forgets them)."""

    def exact(self, t: object) -> torch.Tensor | None:
        """The host copy of `t`'s values where they are known exactly, else None (also once `t` has
        another storage: `param.data = other` swaps it without an op)."""
        entry = self._exact.get(id(t))
        if entry is None or entry[0]() is not t or t.untyped_storage()._cdata != entry[2]:
            return None
        return entry[1]

    def _set_exact(self, t: FakeTensor, values: torch.Tensor) -> None:
        key, exact, storages = id(t), self._exact, self._exact_storages
        self._forget(key)
        storage = t.untyped_storage()._cdata

        def dead(_ref: object) -> None:
            entry = exact.get(key)
            if entry is not None and entry[0] is ref:
                self._forget(key)

        ref = weakref.ref(t, dead)
        exact[key] = (ref, values, storage)
        storages.setdefault(storage, set()).add(key)

    def _forget(self, key: int) -> None:
        entry = self._exact.pop(key, None)
        if entry is not None:
            keys = self._exact_storages.get(entry[2])
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._exact_storages[entry[2]]

    def set_exact(self, t: object, values: torch.Tensor) -> None:
        """Take `t`'s values to be `values` (a host tensor of its shape: what another rank's emulation
        broadcast, `maya.emulator.object_mailbox`), where `t` is small enough to compute on."""
        if isinstance(t, FakeTensor) and t.numel() <= _computed_limit(t.dtype) and tuple(values.shape) == tuple(t.shape):
            self._set_exact(t, values.to(t.dtype))
        else:
            self.written(t)

    def written(self, t: object) -> None:
        """`t` was written to: every known tensor sharing its storage (views included) is forgotten."""
        if isinstance(t, FakeTensor) and self._exact_storages:
            for key in list(self._exact_storages.get(t.untyped_storage()._cdata, ())):
                self._forget(key)

    def assume(self, t: object, value: bool | int | float) -> None:
        """Take every element of `t` to be `value` (a check answered "nothing is wrong"): its values,
        where `t` is small enough to compute on (`_computed_limit`), else a hint (counts, `nonzero`
        and `.item()` follow it)."""
        if not isinstance(t, FakeTensor):
            return
        if t.numel() <= _computed_limit(t.dtype):
            with unset_fake_temporarily():
                self._set_exact(t, torch.full(tuple(t.shape), value, dtype=t.dtype))
        else:
            self.set(t, Hint(density=float(value != 0), value=float(value)))

    def collective(self, op: str, reduce_op: str | None, outputs: tuple, *, root: bool) -> None:
        """A collective wrote `outputs` (`root`: this rank is its root): their values are forgotten,
        except as `AGREEING_REDUCTIONS` says."""
        keeps = (op == "broadcast" and root) or (op == "all_reduce" and reduce_op in AGREEING_REDUCTIONS)
        for t in outputs:
            known = self.exact(t)
            if keeps and known is not None:
                continue
            if (op == "broadcast" or (op == "all_reduce" and reduce_op == "sum")) and known is not None \
                    and not bool(known.any()):
                continue  # zeros: "nothing is wrong" on every rank (a count of missing states, a stop flag)
            self.written(t)

    def _in_place(self, func, args: tuple, kwargs: dict) -> None:
        """A write: what it writes is forgotten, unless the op runs on known values only and writes
        small positional arguments (tensors, or lists of them: foreach ops, as an optimizer counts its
        steps; GradScaler's scale and growth tracker), which are then computed on the host."""
        positions = _written_positions(func)
        targets = [args[i] if i < len(args) else None for i in positions]
        written = _written_arguments(func, args, kwargs)
        host = host_kwargs = None
        if positions and len(written) == sum(len(t) if isinstance(t, (list, tuple)) else 1 for t in targets) \
                and all(isinstance(t, FakeTensor) and t.numel() <= _computed_limit(t.dtype) for t in written):
            host = self._host_values(args, False)
            host_kwargs = self._host_values(kwargs, False) if host is not None else None
        for a in written:
            self.written(a)
        if host_kwargs is None:
            return
        try:
            with unset_fake_temporarily():
                for i in positions:
                    host[i] = [t.clone() for t in host[i]] if isinstance(host[i], list) else host[i].clone()
                func(*host, **host_kwargs)
        except Exception:  # the host cannot run it on these values: they stay unknown
            return
        for i, target in zip(positions, targets):
            for t, values in zip(*((target, host[i]) if isinstance(target, (list, tuple)) else ([target], [host[i]]))):
                self._set_exact(t, values)

    def _unknown(self, checked: object) -> bool:
        """Whether `checked` (a fake tensor or a list of them) holds values the emulation does not know."""
        items = checked if isinstance(checked, (list, tuple)) else [checked]
        return any(isinstance(t, FakeTensor) and self.exact(t) is None for t in items)

    def _computed(self, name: str, func, args: tuple, kwargs: dict, out: object) -> None:
        """Values of `out` computed on the host when every fake tensor among the inputs is known (or
        for a factory, needs none), the op is deterministic, and every output is small."""
        outs = out if isinstance(out, (tuple, list)) else (out,)
        if not outs or not all(isinstance(o, FakeTensor) and o.numel() <= _computed_limit(o.dtype) for o in outs):
            return
        if name not in FACTORIES and not any(isinstance(a, FakeTensor) for a in flatten_tensors(args, {})):
            return  # no known input, and not a factory (`empty` makes no values)
        if func.namespace != "aten" or torch.Tag.nondeterministic_seeded in func.tags:
            return  # collectives (c10d_functional) and random ops: not run on the host
        like = name.endswith("_like")
        host_args = self._host_values(args, like)
        host_kwargs = self._host_values(kwargs, False)
        if host_args is None or host_kwargs is None:
            return
        if "device" in host_kwargs:
            host_kwargs["device"] = torch.device("cpu")
        host_kwargs.pop("pin_memory", None)
        try:
            with unset_fake_temporarily():
                result = func(*host_args, **host_kwargs)
                results = result if isinstance(result, (tuple, list)) else (result,)
                values = [r.clone() if isinstance(r, torch.Tensor) else None for r in results]
        except Exception:  # an op the host cannot run on these values: they stay unknown
            return
        for o, v in zip(outs, values):
            if v is not None and tuple(v.shape) == tuple(o.shape):
                self._set_exact(o, v)

    def _host_values(self, tree, like: bool):
        """`tree` (args or kwargs) with each fake tensor replaced by the host copy of its values; None
        when one is not known. For a `*_like` factory, its first argument stands by shape only."""
        if isinstance(tree, dict):
            out = {}
            for k, v in tree.items():
                h = self._host_values([v], False)
                if h is None:
                    return None
                out[k] = h[0]
            return out
        out = []
        for i, v in enumerate(tree):
            if isinstance(v, FakeTensor):
                if like and i == 0:
                    with unset_fake_temporarily():
                        v = torch.empty(tuple(v.shape), dtype=v.dtype)
                else:
                    v = self.exact(v)
                    if v is None:
                        return None
            elif isinstance(v, (list, tuple)) and any(isinstance(x, torch.Tensor) for x in v):
                v = self._host_values(v, False)
                if v is None:
                    return None
            elif isinstance(v, torch.Tensor) and v.device.type != "cpu":
                return None
            out.append(v)
        return out

    def get(self, t: object) -> Hint | None:
        """The hint of tensor `t`, or None."""
        return self._hints.get(t)

    def set(self, t: torch.Tensor, hint: Hint) -> None:
        self._hints.set(t, hint)

    def observe(self, name: str, func, args: tuple, kwargs: dict, out: object) -> None:
        """Derive the hints of `out` from the op and its inputs' hints (called after every op)."""
        first = args[0] if args else None
        if self._exact_storages and _written(func):
            self._in_place(func, args, kwargs)
        zero_at = ZERO_WHEN_UNKNOWN.get(name)
        if zero_at is not None and self._unknown(first):
            answer = out if zero_at == OUTPUT else args[zero_at]
            self.written(answer)
            self.assume(answer, 0)
        elif name == "aten::_to_copy" and _small_host(first) and isinstance(out, FakeTensor):
            with unset_fake_temporarily():
                self._set_exact(out, first.clone())  # a GPU copy of Python data: up to EXACT_MAX_NUMEL
        elif name in FACTORIES or (self._exact and not _written(func)):
            self._computed(name, func, args, kwargs, out)
        if name in INDEX_SOURCES:
            self._index_source(name, args, kwargs, out)
            return
        if name in _SUMS and isinstance(out, FakeTensor) and self._unknown_mask(name, first):
            # A count of a mask Maya knows nothing about counts every element, as `nonzero` of it
            # selects every element: `(beam_indices + 1).bool().sum(dim=1)` is the full length.
            self._sum(name, EVERY_ELEMENT, first, out)
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
        elif base in ("any", "all") and hint.density is not None:
            # Whether any / every element is nonzero: a check's hinted answer computes on
            # (ZeRO-3 ORs `isinf(flat_grads).any()` into a flag it reads after an all-reduce).
            self.assume(out, hint.density > 0 if base == "any" else hint.density >= 1)
        elif name in ("aten::mean", "aten::mean.dim") and hint.density is not None:
            self.set(out, Hint(value=hint.density))
        elif name == "aten::histc" and hint.index_range:
            self.set(out, Hint(value=first.numel() / out.numel()))
        elif name in EXTREMES and hint.value is not None and hint.density is None:
            self.set(out, Hint(value=hint.value))  # every element expected equal: so is the largest
        elif name in SHIFTS and hint.value is not None and hint.density is None:
            shifted = _shifted(name, hint.value, args, kwargs)
            if shifted is not None:
                self.set(out, Hint(value=shifted))  # a length plus a prompt length

    def selected_count(self, mask: torch.Tensor) -> int:
        """How many elements of `mask` a `nonzero` selects: its nonzero values where known (`exact`),
        else numel * density, or every element."""
        exact = self.exact(mask)
        if exact is not None:
            with unset_fake_temporarily():
                return int(torch.count_nonzero(exact))
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

    def _unknown_mask(self, name: str, x: object) -> bool:
        """Whether `x` is a mask with neither known values nor a hint, whose count `name` takes: a
        boolean tensor for a sum, any tensor for `count_nonzero`."""
        if not isinstance(x, FakeTensor) or not self._unknown(x) or self.get(x) is not None:
            return False
        return x.dtype is torch.bool or name.startswith("aten::count_nonzero")

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


def _computed_limit(dtype: torch.dtype) -> int:
    return COMPUTED_MAX_FLOAT_NUMEL if dtype.is_floating_point or dtype.is_complex else COMPUTED_MAX_NUMEL


@functools.cache
def _written(func) -> tuple[tuple[int, str, bool], ...]:
    """(position, name, keyword-only) of each argument `func` writes to (in-place and out= ops);
    empty for an op that writes nothing."""
    return tuple((i, a.name, a.kwarg_only) for i, a in enumerate(func._schema.arguments)
                 if a.alias_info is not None and a.alias_info.is_write)


def _written_positions(func) -> tuple[int, ...]:
    """Positions of the arguments `func` writes to, when every one of them is positional (else none)."""
    written = _written(func)
    return () if any(kwarg_only for _, _, kwarg_only in written) else tuple(i for i, _, _ in written)


def _written_arguments(func, args: tuple, kwargs: dict) -> list:
    """The arguments `func` writes to, lists opened."""
    out = []
    for i, name, kwarg_only in _written(func):
        value = args[i] if i < len(args) and not kwarg_only else kwargs.get(name)
        out.extend(value if isinstance(value, (list, tuple)) else [value])
    return out
