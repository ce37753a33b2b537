"""Host-overhead model: the CPU time eager PyTorch spends issuing each traced operation.

The per-category costs come from `host_overhead.json`, measured on the real GPU machine by
`maya profile` (family `host`, see `host_overhead.py`), never from the emulating CPU's own speed.
They apply to every workload alike; `PHASE_COST` says which figure a trace row is charged.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

_DATA = Path(__file__).parent / "data"

PHASE_COST = {
    "forward": "module_forward_op_us",
    "other": "aten_op_us",
    "backward": "autograd_backward_op_us",
    "optimizer": "aten_op_us",
}
"""Trace phase -> host_overhead.json figure charged per kernel/memcpy/collective launch in that phase
(a forward launch's figure times `forward_in_situ_factor`). Foreach and fused optimizer ops also pay for the tensors in their lists; see `LIST_ENTRIES_PER_PARAMETER`."""

LIST_ENTRIES_PER_PARAMETER = 12
"""Tensor-list entries that the measured optimizer step walks per parameter: `host_overhead.py` times
`Adam(foreach=True).step()`, whose foreach ops take lerp_ 2 lists, mul_ 1, addcmul_ 3, sqrt 1,
div_ 1, add_ 1 and addcdiv_ 3. Its `optimizer_foreach_per_tensor_us` is host time per parameter,
so one list entry of any foreach op costs that divided by 12."""


@functools.cache
def _host_overhead_file(gpu: str) -> dict:
    """host_overhead.json measured on a real `gpu` machine; the H200's for GPUs without one."""
    path = _DATA / gpu / "host_overhead.json"
    if not path.exists():
        path = _DATA / "h200" / "host_overhead.json"
    return json.loads(path.read_text())


def read_host_profile(path: str | Path) -> dict[str, float]:
    """The per-op host figures (microseconds) of a `maya profile --families host` output, its directory
    or its host_overhead.json (the shipped files' format), measured on another machine.

    Raises:
        FileNotFoundError: no such file (or no host_overhead.json in the directory).
        ValueError: the file is not JSON with a `per_op_us` object of non-negative numbers.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "host_overhead.json"
    if not path.is_file():
        raise FileNotFoundError(f"host profile {path} not found (the output of `maya profile --families host --out DIR`)")
    try:
        figures = json.loads(path.read_text()).get("per_op_us")
    except (json.JSONDecodeError, AttributeError) as e:
        raise ValueError(f"host profile {path} is not a `maya profile --families host` JSON file: {e}") from None
    if not isinstance(figures, dict) or not figures:
        raise ValueError(f"host profile {path} has no per_op_us figures (is it `maya profile --families host` output?)")
    return with_in_situ_extras(_checked_figures(figures, f"host profile {path}"))


def with_in_situ_extras(figures: dict[str, float], gpu: str = "h200") -> dict[str, float]:
    """A machine's profile `figures` with the shipped in-situ CNN extras (`IN_SITU_EXTRAS`) in place of
    its tiny-layer readings, each put at that machine's speed by the ratio of its `aten_op_us` to the
    shipped one (the extras were scaled to unprofiled time by it); unchanged without `aten_op_us`."""
    shipped = host_overhead(gpu)
    if "aten_op_us" not in figures or not shipped.get("aten_op_us"):
        return figures
    speed = figures["aten_op_us"] / shipped["aten_op_us"]
    return {**figures, **{k: shipped[k] * speed for k in IN_SITU_EXTRAS if k in shipped}}


def host_profile_figures(profile: str | Path | Mapping[str, float] | None) -> dict[str, float] | None:
    """The per-op host figures of `profile`: a `maya profile --families host` output (read with
    `read_host_profile`), figures already read (checked the same way), or None for the shipped ones.

    Raises:
        FileNotFoundError, ValueError: as `read_host_profile` says.
    """
    if profile is None:
        return None
    if not isinstance(profile, Mapping):
        return read_host_profile(profile)
    if not profile:
        raise ValueError("host figures: no per_op_us figures")
    return _checked_figures(profile, "host figures")


def _checked_figures(figures: Mapping, source: str) -> dict[str, float]:
    bad = sorted(str(k) for k, v in figures.items() if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0)
    if bad:
        raise ValueError(f"{source}: per_op_us figures must be non-negative numbers of microseconds: {', '.join(bad)}")
    return {str(k): float(v) for k, v in figures.items()}


def host_overhead(gpu: str = "h200") -> dict[str, float]:
    """Per-op host costs (microseconds) measured on a real `gpu` machine; the H200's for others."""
    return _host_overhead_file(gpu)["per_op_us"]


def kernel_gap_us(gpu: str = "h200") -> float:
    """The GPU's gap between back-to-back kernels of one stream (microseconds), measured from real
    `gpu` profiler traces (`kernel_gap_us` in host_overhead.json, by benchmarks/kernel_gap.py; the
    H200's for others); 0.0 where never measured."""
    return float(_host_overhead_file(gpu).get("kernel_gap_us", 0.0))


def graph_kernel_gap_us(gpu: str = "h200") -> float | None:
    """The gap between a CUDA graph's back-to-back kernels (microseconds): `graph_kernel_gap_us` in
    host_overhead.json (by benchmarks/kernel_gap.py --graph; the H200's file for others); None where
    never measured (the simulator then uses `kernel_gap_us`)."""
    value = _host_overhead_file(gpu).get("graph_kernel_gap_us")
    return None if value is None else float(value)


def composite_op_extra_us(gpu: str = "h200") -> dict[str, float]:
    """Op -> host time (microseconds) its CUDA implementation spends beyond one launch, measured on a
    real `gpu` machine (`composite_op_extra_us` in host_overhead.json; the H200's for others)."""
    return _host_overhead_file(gpu).get("composite_op_extra_us", {})


def attention_extra_us(gpu: str = "h200") -> dict[str, float]:
    """cuDNN attention op -> host time (microseconds) a call spends beyond one launch (its execution
    plan built or looked up on every call), measured from real `gpu` profiles (`attention_extra_us` in
    host_overhead.json, by benchmarks/attention_host_extra.py; the H200's for others); none where
    never measured."""
    return _host_overhead_file(gpu).get("attention_extra_us", {})


HOST_EVENT_COST = {
    "torch:checkpoint": ("checkpoint_forward_region_us", "checkpoint_forward_per_op_us"),
    "torch:checkpoint_recompute": ("checkpoint_recompute_region_us", "checkpoint_recompute_per_op_us"),
    "dtensor:op": ("dtensor_op_us", "dtensor_list_entry_us"),
    "fsdp:unit": ("fsdp_unit_us", "fsdp_unit_per_param_us"),
    "ddp:step": ("ddp_step_us", "ddp_param_us"),
    "cuda:graph_replay": ("aten_op_us", None),
}
"""Host event op -> (fixed, per-op) host_overhead.json figures it is charged; the per-op figure is
multiplied by the event's `ops` attribute (checkpoint: the GPU ops its region ran, recomputed in
backward; DTensor: the DTensors of a foreach list beyond the first; FSDP2 and DDP: the parameters).
A CUDA graph's replay is charged one kernel launch whatever the graph holds (`cudaGraphLaunch` has not
been measured on the GPU machines).
The FSDP2 unit's figures cover its forward and backward hooks together, charged at its forward. A
checkpoint region's figures are split by `checkpoint_figures`."""


def checkpoint_figures(costs: Mapping[str, float]) -> dict[str, float]:
    """The host figures of a checkpoint region's two events from `costs` (host_overhead.json's
    `per_op_us`): `checkpoint_region_us` and `checkpoint_per_op_us` are a region's whole extra host
    time, and `checkpoint_forward_region_us` and `checkpoint_forward_per_op_us` the share of it its
    forward pays (`torch:checkpoint`); the rest is paid where backward recomputes the region
    (`torch:checkpoint_recompute`). A profile without the forward share (measured before 2026-12-06)
    charges the whole at the forward, as Maya did then."""
    out = {}
    for part in ("region", "per_op"):
        total = costs.get(f"checkpoint_{part}_us", 0.0)
        forward = min(max(costs.get(f"checkpoint_forward_{part}_us", total), 0.0), total)
        out[f"checkpoint_forward_{part}_us"] = forward
        out[f"checkpoint_recompute_{part}_us"] = total - forward
    return out


def host_speed_range(gpu: str = "h200") -> tuple[float, float] | None:
    """Host costs on a fast and on a slow machine of the kind, as multipliers of the median machine's: the
    10th and 90th percentiles of host-set steps' time over their median across real `gpu` machines
    (`host_speed_range` in host_overhead.json, by benchmarks/host_speed_range.py; the H200's for
    others); None where never measured."""
    value = _host_overhead_file(gpu).get("host_speed_range")
    return (float(value[0]), float(value[1])) if value else None


def host_scale(gpu: str = "h200") -> float:
    """The multiplier of the host costs computed from the shipped figures (`host_scale` in
    host_overhead.json, by benchmarks/host_scale.py; the H200's for others): the figures are one
    machine's, or scaled to its host speed, and this puts them at the median machine of the kind, on
    which the validation table is scored. `UNSCALED_FIGURES` and the new-shape figures, measured on
    other machines at their own speed, and figures measured on the user's machine (`per_op_us`) are not
    scaled. 1.0 where never fitted."""
    return float(_host_overhead_file(gpu).get("host_scale", 1.0))


def _scale(gpu: str, per_op_us: Mapping[str, float] | None, scale: float | None) -> float:
    """The multiplier of the figures: `scale` if given, else `host_scale(gpu)` for the shipped figures
    and 1.0 for a machine's own (`per_op_us`)."""
    if scale is not None:
        return scale
    return host_scale(gpu) if per_op_us is None else 1.0


UNSCALED_FIGURES = frozenset({"ddp_step_us", "ddp_param_us", "fsdp_unit_us", "fsdp_unit_per_param_us",
                              "dtensor_op_us", "dtensor_list_entry_us"})
"""Shipped figures measured in situ on multi-GPU machines at their own host speed (host_overhead.json's
notes), which `host_scale` leaves as measured."""


def forward_in_situ_factor(gpu: str = "h200") -> float:
    """How much longer real models take to issue a forward launch than the microbenchmark's module
    chain (`forward_in_situ_factor` in host_overhead.json, by benchmarks/host_phase_factors.py from
    in-situ host times of calibration workloads on real `gpu` machines; the H200's for others);
    1.0 where never measured."""
    return float(_host_overhead_file(gpu).get("forward_in_situ_factor", 1.0))


def host_costs_us(
    df: pd.DataFrame, gpu: str = "h200", *, per_op_us: dict[str, float] | None = None,
    forward_factor: float | None = None, scale: float | None = None,
) -> np.ndarray:
    """CPU time the issuing thread spends on each trace row, microseconds.

    Args:
        df: trace rows.
        gpu: whose host_overhead.json figures apply.
        per_op_us: figures to use instead of that file's `per_op_us` (another machine's microbenchmarks);
            without them the figures are multiplied by `host_scale(gpu)` (but `UNSCALED_FIGURES` and the
            new-shape figures).
        forward_factor: instead of `forward_in_situ_factor(gpu)`, the multiplier of a forward launch's
            `module_forward_op_us` (1.0 gives the microbenchmark's figure alone).
        scale: instead of that multiplier (benchmarks/host_scale.py fits it).
    """
    scale = _scale(gpu, per_op_us, scale)
    costs = {k: v if k in UNSCALED_FIGURES else v * scale for k, v in {**host_overhead(gpu), **(per_op_us or {})}.items()}
    costs.update(checkpoint_figures(costs))
    factor = forward_in_situ_factor(gpu) if forward_factor is None else forward_factor
    figures = {p: costs[k] * (factor if p == "forward" else 1.0) for p, k in PHASE_COST.items()}
    per_phase = df["phase"].map(figures).fillna(costs["aten_op_us"])
    host = per_phase.to_numpy(dtype=float)
    kind = df["kind"].to_numpy()
    launches = np.isin(kind, ["kernel", "memcpy", "collective"])
    host = np.where(launches, host, np.where(kind == "sync", costs["synchronize_us"], 0.0))
    from maya.emulator.attrs import INTERNAL_LAUNCH  # here: maya.emulator.attrs imports torch

    # A kernel another op's CUDA implementation launches from C++ (an operand copy) pays one aten op's
    # launch, not its phase's Python-level figure.
    host = np.where(launches & marked_rows(df, INTERNAL_LAUNCH), costs["aten_op_us"], host)
    host_rows = np.flatnonzero(kind == "host")
    if len(host_rows):
        names = df["op"].to_numpy()[host_rows]
        attrs = df["attrs"].to_numpy()[host_rows]
        keys = [HOST_EVENT_COST.get(name, (None, None)) for name in names]
        fixed = np.array([costs.get(f, 0.0) for f, _ in keys])
        per_op = np.array([costs.get(k, 0.0) for _, k in keys])
        ops = np.array([json.loads(a).get("ops", 0) if a else 0 for a in attrs], dtype=float)
        host[host_rows] = fixed + per_op * ops
    op = df["op"]
    # Ops whose CUDA implementation launches a sort or several sub-ops (embedding backward, index_put
    # with accumulate, nonzero) cost the issuing thread 70-130 us more than a one-launch op, and a CNN
    # layer's convolution and batch norm more too (cuDNN's plan lookup, a batch norm's several
    # kernels), and cuDNN's attention (its plan again), where the GPU machine's figures measured it.
    extra_us = {**{name: costs.get(key, 0.0) for name, key in LAYER_EXTRA_COST.items()},
                **{name: v * scale for name, v in {**composite_op_extra_us(gpu), **attention_extra_us(gpu)}.items()}}
    extra = op.map(extra_us).fillna(0.0).to_numpy(dtype=float)
    host = np.where(launches, host + extra, host)
    host = np.where(launches, host + new_shape_costs_us(df, gpu), host)
    foreach = (op.str.startswith("aten::_foreach_") | op.str.startswith("aten::_fused_adam")).to_numpy()
    if foreach.any():
        # List entries, not distinct tensors: a list repeated in the call (Adam's grads in
        # `_foreach_addcmul_`) shares its tensors' indices but is still walked on the host.
        n_tensors = np.zeros(len(df))
        n_tensors[foreach] = [a.count('"$t"') if isinstance(a, str) else len(shapes) for a, shapes in
                              zip(df["attrs"].to_numpy()[foreach], df["input_shapes"].to_numpy()[foreach])]
        per_entry_us = costs["optimizer_foreach_per_tensor_us"] / LIST_ENTRIES_PER_PARAMETER
        host = np.where(foreach, host + per_entry_us * n_tensors, host)
    # A CUDA graph's rows were launched by its replay's one host row.
    return np.where(graph_replayed(df), 0.0, host)


def graph_replayed(df: pd.DataFrame) -> np.ndarray:
    """Whether a CUDA graph's replay launched each row: the `graph_replay` column where the caller
    has set it (`maya.predict.estimated_rank`), else the rows' `graph_replay` marks, read here."""
    if "graph_replay" in df.columns:
        return df["graph_replay"].to_numpy(dtype=bool)
    from maya.emulator.attrs import GRAPH_REPLAY

    return marked_rows(df, GRAPH_REPLAY)


def marked_rows(df: pd.DataFrame, mark: str) -> np.ndarray:
    """Whether each row's `attrs` JSON carries the top-level key `mark` (one of `maya.emulator.attrs`'s
    run marks, which no op argument spells): a substring test, without parsing every row."""
    if "attrs" not in df.columns:
        return np.zeros(len(df), dtype=bool)
    key = f'"{mark}"'
    return np.fromiter((isinstance(a, str) and key in a for a in df["attrs"].to_numpy()), dtype=bool, count=len(df))


def new_shape_costs_us(df: pd.DataFrame, gpu: str = "h200") -> np.ndarray:
    """Host time (microseconds) each row spends beyond its launch on a shape the process had not run
    before: cuBLAS's kernel lookup for a GEMM, cuDNN's plan for a convolution or attention. A row
    marked `new_shape` (`maya.emulator.shape_caches`) pays its figure of `new_shape_us` in
    host_overhead.json (measured on a real `gpu` machine; the H200's for others; nothing for a figure
    never measured), and a row also marked `data_dependent_shape` pays `data_dependent_new_share` of
    it: the emulator gives a routed size its average every step, where on a GPU only some of a step's
    sizes are new (`benchmarks/new_shape_figures.py`)."""
    out = np.zeros(len(df))
    file = _host_overhead_file(gpu)
    figures = file.get("new_shape_us", {})
    if not len(df) or not figures or "attrs" not in df.columns:
        return out
    from maya.emulator.attrs import DATA_DEPENDENT_SHAPE, NEW_SHAPE

    attrs = df["attrs"].to_numpy()
    rows = np.flatnonzero(marked_rows(df, NEW_SHAPE))
    share = float(file.get("data_dependent_new_share", 1.0))
    for i in rows:
        marks = json.loads(attrs[i])
        figure = figures.get(marks.get(NEW_SHAPE), 0.0)
        out[i] = figure * (share if marks.get(DATA_DEPENDENT_SHAPE) else 1.0)
    return out


LAYER_EXTRA_COST = {
    "aten::cudnn_convolution": "conv_forward_extra_us",
    "aten::convolution": "conv_forward_extra_us",
    "aten::convolution_backward": "conv_backward_extra_us",
    "aten::native_batch_norm": "batch_norm_forward_extra_us",
    "aten::cudnn_batch_norm": "batch_norm_forward_extra_us",
    "aten::_batch_norm_with_update": "batch_norm_forward_extra_us",
    "aten::native_batch_norm_backward": "batch_norm_backward_extra_us",
    "aten::cudnn_batch_norm_backward": "batch_norm_backward_extra_us",
    "aten::batch_norm_backward": "batch_norm_backward_extra_us",
}
"""Trace op -> the host figure (`maya.estimator.host_overhead`) it pays beyond its
phase's one-launch figure; nothing where the GPU's figures lack it."""

IN_SITU_EXTRAS = tuple(sorted(set(LAYER_EXTRA_COST.values())))
"""The layer extras, which the shipped figures take from real CNN steps' profiles
(benchmarks/cnn_host_extra.py), where a machine's `maya profile --families host` times tiny layers whose
readings moved 0-86 us between leases (`with_in_situ_extras`). Sorted, so that every process adds them in
one order."""


RNN_CELL_LAUNCH = {"aten::_cudnn_rnn": "rnn_cell_forward_us", "aten::_cudnn_rnn_backward": "rnn_cell_backward_us"}
"""The host figure (`maya.estimator.host_overhead`) per cell of each cuDNN RNN op."""


def launch_stream_us(df: pd.DataFrame, gpu: str = "h200", *, per_op_us: dict[str, float] | None = None,
                     scale: float | None = None) -> np.ndarray:
    """Host time each trace row spends launching kernels that the GPU may already run, microseconds.

    A cuDNN RNN launches kernels for every time step, layer and direction (`features.rnn_cells`), so
    its host time grows with the sequence while its first kernels run: the simulator lets the GPU
    start it when the host starts launching, and ends it no earlier than the last launch. Zero for
    other rows, and for every row where the GPU's host figures lack `rnn_cell_forward_us` /
    `rnn_cell_backward_us` (measured by `maya profile --families host` since 2026-12-02; the shipped
    H200 figures have them). The shipped figures' times are multiplied by `host_scale(gpu)` (or
    `scale`), as `host_costs_us` does.
    """
    from maya.estimator.features import rnn_cells

    costs = {**host_overhead(gpu), **(per_op_us or {})}
    out = np.zeros(len(df))
    if not len(df) or not any(key in costs for key in RNN_CELL_LAUNCH.values()):
        return out
    from maya.emulator.attrs import GRAPH_REPLAY

    replayed = f'"{GRAPH_REPLAY}"'  # a CUDA graph's replay launched the row, not the host
    rnn = df["op"].str.startswith("aten::_cudnn_rnn").to_numpy(dtype=bool) & (df["kind"].to_numpy() == "kernel")
    for i in np.flatnonzero(rnn):
        base, attrs = df["op"].iat[i].split(".", 1)[0], df["attrs"].iat[i]
        if RNN_CELL_LAUNCH.get(base) in costs and not (isinstance(attrs, str) and replayed in attrs):
            out[i] = costs[RNN_CELL_LAUNCH[base]] * rnn_cells(base, attrs, df["input_shapes"].iat[i])
    return out * _scale(gpu, per_op_us, scale)
