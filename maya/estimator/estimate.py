"""`estimate_trace`: the GPU time of every row of a rank's trace, each estimate tagged by its source.

Kernel rows are estimated in order of trust: the measured time of the exact signature
(`exact`), the family's CatBoost model (`catboost`), else the roofline (`roofline`). A trace has
few distinct signatures, so rows are deduplicated by signature key, each unique signature is
estimated once, and the results are joined back. Memcpy rows get a link-bandwidth roofline;
collective rows are left to the collective model and, like sync/event/iteration rows, get 0 with
source `none`.

Catalog GPUs without profiles of their own (h100, a100) are estimated with the H200 models and
scaled by the catalog (`transfer_ratio`): the part of an op's source-GPU time that its bounding
resource explains (peak FLOP/s for its dtype when compute-bound on the source GPU, memory bandwidth
otherwise, each at the roofline's efficiency) scales by that resource's catalog ratio, the rest
(launch latency, an op too small to stream at full rate) stays. Those rows are tagged
`exact-transfer` / `catboost-transfer`; they and roofline rows carry `low_confidence=True`.
"""

from __future__ import annotations

import contextlib
import enum
import json
import logging
import os

import numpy as np
import pandas as pd
import pyarrow as pa

from maya.estimator.calibration import NO_CALIBRATION, Calibration, load_calibration
from maya.estimator.exact_table import ExactTable
from maya.estimator.families import GEMM, roofline_by_design
from maya.estimator.features import (
    FAMILY_FEATURE_NAMES, FEATURE_COLUMNS, extract_features, features_for_family, target_base_us,
)
from maya.estimator.fit_report import from_target
from maya.estimator.grouped_gemm import as_batched_gemms
from maya.estimator.model_set import ModelSet, load_model_set, resolve_models_dir
from maya.estimator.roofline import (
    COMPUTE_EFFICIENCY,
    KERNEL_LATENCY_US,
    MEMORY_EFFICIENCY,
    compute_bound,
    peak_flops_per_s,
    roofline_duration_us,
)
from maya.estimator.signature import signature_keys
from maya.estimator.tensor_columns import as_arrow
from maya.hardware import GpuSpec, load_gpu
from maya.trace import EventKind

logger = logging.getLogger(__name__)


class EstimateSource(str, enum.Enum):
    """Where a row's `duration_us` came from."""

    EXACT = "exact"
    """Measured median of the identical signature on the target GPU."""
    CATBOOST = "catboost"
    """The op family's CatBoost model, trained on the target GPU."""
    EXACT_TRANSFER = "exact-transfer"
    """Measured on another GPU, scaled by catalog ratios."""
    CATBOOST_TRANSFER = "catboost-transfer"
    """Another GPU's CatBoost model, scaled by catalog ratios."""
    ROOFLINE = "roofline"
    """Roofline of the target GPU: no profile and no model covers the op."""
    NONE = "none"
    """Not a GPU-time row (sync, events, iteration ends, collectives); duration 0."""


ExactArg = ExactTable | pa.Table | pd.DataFrame | str | os.PathLike | bool | None

UNPROFILED_DTYPES = {GEMM: frozenset({"float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"})}
"""Compute dtypes of a family that `maya profile` does not time (its GEMM grids are float32, TF32,
bfloat16 and float16), so its model never saw them: a float8 GEMM (`torch._scaled_mm`) would get the
model's guess for an unknown category. Their rows take the roofline at the catalog's rate for the
dtype (`float8`), counted in the warning, unless the exact table has them."""


def estimate_trace(
    table_or_df: pa.Table | pd.DataFrame,
    *,
    gpu: str = "h200",
    models_dir: str | os.PathLike | None = None,
    exact: ExactArg = None,
    allow_tf32: bool = False,
    calibrated: bool = True,
    warn_unmodelled: bool = True,
) -> pd.DataFrame:
    """Add `duration_us`, `estimate_source` and `low_confidence` to every trace row.

    Args:
        table_or_df: a rank's trace (`maya.trace.read_rank_trace`) or a DataFrame of its rows.
        gpu: catalog key of the target GPU.
        models_dir: fitted models (`fit_models` output); default: those shipped for `gpu`, else the
            H200 models with transfer scaling.
        exact: exact-signature table: None uses the models' own, False disables exact lookup; an
            `ExactTable`, profile rows, or a Parquet file/directory of profiles replaces it.
        allow_tf32: whether float32 matmuls may use TF32 (traces do not record it).
        calibrated: apply the in-training calibration (`calibration.py`: per-family factors, the
            profiles' event overhead); False gives the raw profile-based estimates that
            `benchmarks/calibrate.py` fits it from.
        warn_unmodelled: log a warning that counts the ops no model covers (roofline estimates);
            False for partial estimates whose whole trace is estimated (and warned about) later.

    Returns:
        The rows as a DataFrame (list columns Arrow-backed when given an Arrow table) with
        `duration_us` (float, microseconds of GPU time), `estimate_source` (an `EstimateSource`
        value) and `low_confidence` (bool).

    Raises:
        FileNotFoundError: no fitted models; the message names the path and the `maya fit` command.
    """
    models = load_model_set(str(resolve_models_dir(gpu, models_dir)))
    duration_us, source, low_confidence = _estimate(
        table_or_df, models=models, target=load_gpu(gpu), exact=_exact_table(models, exact), allow_tf32=allow_tf32,
        calibration=load_calibration(models.models_dir) if calibrated else NO_CALIBRATION,
        warn_unmodelled=warn_unmodelled,
    )
    if isinstance(table_or_df, pa.Table):
        frame = table_or_df.to_pandas(types_mapper=_arrow_backed_lists)
    else:
        frame = table_or_df.copy(deep=False)
    frame["duration_us"] = duration_us
    frame["estimate_source"] = source
    frame["low_confidence"] = low_confidence
    return frame


def source_shares(df: pd.DataFrame) -> dict[str, float]:
    """Share of the total predicted `duration_us` that each `estimate_source` contributed.

    Returns:
        `{source: fraction}` over the sources present, fractions summing to 1 (all 0 when the
        total time is 0), largest first.
    """
    totals = df.groupby("estimate_source", sort=False)["duration_us"].sum().sort_values(ascending=False)
    total = float(totals.sum())
    return {str(name): (float(value) / total if total > 0 else 0.0) for name, value in totals.items()}


def _arrow_backed_lists(kind: pa.DataType):
    # Converting list columns of a million rows to Python objects costs more than estimating them.
    return pd.ArrowDtype(kind) if pa.types.is_list(kind) or pa.types.is_large_list(kind) else None


def _exact_table(models: ModelSet, exact: ExactArg) -> ExactTable | None:
    if exact is None or exact is True:
        return models.exact
    if exact is False:
        return None
    if isinstance(exact, ExactTable):
        return exact
    if isinstance(exact, (pa.Table, pd.DataFrame)):
        return ExactTable.from_profiles(exact)
    return ExactTable.load(exact)


def _estimate(
    data: pa.Table | pd.DataFrame, *, models: ModelSet, target: GpuSpec, exact: ExactTable | None, allow_tf32: bool,
    calibration: Calibration, warn_unmodelled: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(duration_us, estimate_source, low_confidence) arrays for every row of a trace."""
    table = as_arrow(data, ("kind", *FEATURE_COLUMNS))
    rows = table.num_rows
    duration_us = np.zeros(rows, dtype=np.float64)
    source = np.full(rows, EstimateSource.NONE.value, dtype=object)
    low_confidence = np.zeros(rows, dtype=bool)
    if "kind" in table.column_names:
        kind = np.asarray(table.column("kind").to_numpy(zero_copy_only=False), dtype=object)
    else:
        kind = np.full(rows, EventKind.KERNEL.value, dtype=object)

    kernel = np.flatnonzero(kind == EventKind.KERNEL.value)
    if len(kernel):
        kernels = as_batched_gemms(table if len(kernel) == rows else table.take(pa.array(kernel)))
        keys = signature_keys(kernels, allow_tf32=allow_tf32)
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        unique_rows = kernels.take(pa.array(first))
        counts = np.bincount(inverse.ravel(), minlength=len(first))
        u_duration, u_source, u_low = _estimate_unique(
            unique_rows, keys[first], counts, models=models, target=target, exact=exact, allow_tf32=allow_tf32,
            calibration=calibration, warn_unmodelled=warn_unmodelled,
        )
        inverse = inverse.ravel()
        duration_us[kernel] = u_duration[inverse]
        source[kernel] = u_source[inverse]
        low_confidence[kernel] = u_low[inverse]

    memcpy = np.flatnonzero(kind == EventKind.MEMCPY.value)
    if len(memcpy):
        duration_us[memcpy] = _memcpy_duration_us(table.take(pa.array(memcpy)), target)
        source[memcpy] = EstimateSource.ROOFLINE.value
        low_confidence[memcpy] = True
    return duration_us, source, low_confidence


def _model_features(model, family: str) -> list[str]:
    """The feature columns `model` was trained on, in its order (a model trained before a feature was
    added keeps predicting from the ones it knows); `features_for_family` for models without names."""
    names = list(getattr(model, "feature_names_", None) or features_for_family(family))
    unknown = sorted(set(names) - FAMILY_FEATURE_NAMES)
    if unknown:
        raise ValueError(f"the {family} model wants features {unknown} that this version of Maya does not compute; "
                         "refit it with `maya fit`")
    return names


def _estimate_unique(
    table: pa.Table, keys: np.ndarray, counts: np.ndarray, *, models: ModelSet, target: GpuSpec,
    exact: ExactTable | None, allow_tf32: bool, calibration: Calibration, warn_unmodelled: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Estimate each distinct signature once; `counts` is how many trace rows share it."""
    n = table.num_rows
    features = extract_features(table, models.gpu, allow_tf32=allow_tf32)
    ops = features["op"].to_numpy()
    family = models.families(ops)
    dtype = features["dtype"].to_numpy()
    duration_us = exact.lookup(keys) if exact is not None else np.full(n, np.nan)
    source = np.where(np.isnan(duration_us), "", EstimateSource.EXACT.value).astype(object)
    base_us = target_base_us(features, family)

    unprofiled = np.zeros(n, dtype=bool)
    for name, dtypes in UNPROFILED_DTYPES.items():
        unprofiled |= (family == name) & np.isin(dtype, list(dtypes))
    for name, model in models.models.items():
        rows = np.flatnonzero((family == name) & np.isnan(duration_us) & ~unprofiled)
        if len(rows):
            x = features.iloc[rows][_model_features(model, name)]
            duration_us[rows] = from_target(model.predict(x), base_us[rows])
            source[rows] = EstimateSource.CATBOOST.value

    flops = np.asarray(table.column("flops").fill_null(0), dtype=np.float64)
    bytes_ = np.asarray(table.column("bytes").fill_null(0), dtype=np.float64)
    learned = source != ""
    calibration.apply(duration_us, family, learned)
    if models.gpu.key != target.key and learned.any():
        peak_source = peak_flops_per_s(models.gpu, dtype, family, allow_tf32=allow_tf32)
        peak_target = peak_flops_per_s(target, dtype, family, allow_tf32=allow_tf32)
        ratio = transfer_ratio(duration_us, flops, bytes_, peak_source, peak_target, models.gpu, target)
        duration_us[learned] *= ratio[learned]
        source[learned] = source[learned] + "-transfer"

    fallback = ~learned
    if fallback.any():
        peak = peak_flops_per_s(target, dtype[fallback], family[fallback], allow_tf32=allow_tf32)
        duration_us[fallback] = roofline_duration_us(
            flops[fallback], bytes_[fallback], peak, target.memory_bandwidth_bytes_per_s
        )
        source[fallback] = EstimateSource.ROOFLINE.value
        if warn_unmodelled:
            labels = np.where(unprofiled, ops.astype(str) + np.char.add(" ", dtype.astype(str)), ops.astype(str))
            _warn_unmodelled(labels[fallback], counts[fallback])
    low_confidence = fallback | (models.gpu.key != target.key)
    return duration_us, source, low_confidence


def transfer_ratio(
    source_us: np.ndarray, flops: np.ndarray, bytes_: np.ndarray, peak_source: np.ndarray, peak_target: np.ndarray,
    source_gpu: GpuSpec, target_gpu: GpuSpec,
) -> np.ndarray:
    """Factor turning each op's source-GPU time `source_us` into a target-GPU time.

    An op is bounded by compute on the source GPU when its intensity reaches the ridge point, else by
    memory bandwidth. Only the share of its time that this resource explains scales by the resource's
    catalog ratio (peak_source / peak_target for its dtype, or source / target bandwidth):

        share = min(1, roofline time of the bounding resource / source_us)
        ratio = 1 + share * (resource ratio - 1)

    with the roofline's efficiencies (`roofline.COMPUTE_EFFICIENCY`, `MEMORY_EFFICIENCY`). A 1 GB copy,
    which streams near the roofline's rate, takes most of the bandwidth ratio; a 5 us kernel, set by
    launch latency, keeps its time. Scaling every memory-bound op by the whole ratio (before session
    32) put seed-1 held-out ops measured on an H200 and an H100 (benchmarks/gpu/session32_h100) 27.7%
    apart at the median (10.1% time-weighted); this rule, 4.5% (4.4%)
    (`python benchmarks/transfer_accuracy.py`).
    """
    source_us = np.asarray(source_us, dtype=np.float64)
    flops = np.nan_to_num(np.maximum(np.asarray(flops, dtype=np.float64), 0.0))
    bytes_ = np.nan_to_num(np.maximum(np.asarray(bytes_, dtype=np.float64), 0.0))
    bound = compute_bound(flops, bytes_, peak_source, source_gpu)
    ratio = resource_ratio(flops, bytes_, peak_source, peak_target, source_gpu, target_gpu)
    roofline_us = 1e6 * np.where(bound, flops / (peak_source * COMPUTE_EFFICIENCY),
                                 bytes_ / (source_gpu.memory_bandwidth_bytes_per_s * MEMORY_EFFICIENCY))
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(source_us > 0, np.clip(roofline_us / source_us, 0.0, 1.0), 1.0)
    return 1.0 + share * (ratio - 1.0)


def resource_ratio(
    flops: np.ndarray, bytes_: np.ndarray, peak_source: np.ndarray, peak_target: np.ndarray,
    source_gpu: GpuSpec, target_gpu: GpuSpec,
) -> np.ndarray:
    """The catalog ratio of each op's bounding resource on the source GPU: peak_source / peak_target
    for its dtype when compute-bound (intensity at or above the ridge point), else source / target
    memory bandwidth. `transfer_ratio` scales the share of the time this resource explains by it."""
    bound = compute_bound(flops, bytes_, peak_source, source_gpu)
    memory_ratio = source_gpu.memory_bandwidth_bytes_per_s / target_gpu.memory_bandwidth_bytes_per_s
    return np.where(bound, peak_source / peak_target, memory_ratio)


_collected_unmodelled: list[pd.Series] | None = None
"""While `one_unmodelled_warning` runs: the unmodelled ops of each estimate, warned about at its end."""


@contextlib.contextmanager
def one_unmodelled_warning():
    """Within it, the estimates' warnings about ops no model covers become one, at the end, counting
    the ops of all of them: the representative ranks of one job would each repeat the same line."""
    global _collected_unmodelled
    outer, _collected_unmodelled = _collected_unmodelled, []
    try:
        yield
    finally:
        collected, _collected_unmodelled = _collected_unmodelled, outer
        if collected:
            every = pd.concat(collected)
            _warn_unmodelled(every.index.to_numpy(), every.to_numpy(),
                             over=f" over {len(collected)} representative ranks" if len(collected) > 1 else "")


def _warn_unmodelled(ops: np.ndarray, counts: np.ndarray, over: str = "") -> None:
    """One warning counting the ops no model covers; those left to roofline on purpose
    (`families.ROOFLINE_BY_DESIGN`: tensor factories, random generators) are only logged at INFO.
    Within `one_unmodelled_warning`, kept for its one warning instead."""
    if _collected_unmodelled is not None:
        _collected_unmodelled.append(pd.Series(counts, index=ops))
        return
    per_op = pd.Series(counts, index=ops).groupby(level=0).sum().sort_values(ascending=False)
    by_design = np.array([roofline_by_design(str(op)) for op in per_op.index], dtype=bool)
    if by_design.any():
        logger.info("%d factory and random-generator ops timed by roofline (families.ROOFLINE_BY_DESIGN)",
                    int(per_op[by_design].sum()))
    per_op = per_op[~by_design]
    if per_op.empty:
        return
    listed = ", ".join(f"{op} ({count})" for op, count in per_op.items())
    logger.warning("%d ops of %d op types had no model%s; roofline used: %s", int(per_op.sum()), len(per_op), over,
                   listed)


def _memcpy_duration_us(table: pa.Table, gpu: GpuSpec) -> np.ndarray:
    """Host<->device copies at PCIe bandwidth, device copies at HBM bandwidth, plus kernel latency."""
    attrs = pd.Series(table.column("attrs").to_pylist(), dtype=object).fillna("{}")
    uniques, inverse = np.unique(attrs.to_numpy(dtype=str), return_inverse=True)
    over_host = np.array([_touches_host(text) for text in uniques] + [False])[:-1][inverse]
    bandwidth = np.where(over_host, gpu.pcie_bandwidth_bytes_per_s, gpu.memory_bandwidth_bytes_per_s)
    bytes_ = np.asarray(table.column("bytes").fill_null(0), dtype=np.float64)
    return bytes_ / bandwidth * 1e6 + KERNEL_LATENCY_US


def _touches_host(attrs: str) -> bool:
    try:
        parsed = json.loads(attrs)
    except json.JSONDecodeError:
        return True
    ends = [parsed.get("src"), parsed.get("dst")] if isinstance(parsed, dict) else []
    return any("cpu" in json.dumps(end) for end in ends if end is not None)


class _BatchEstimator:
    """Ray Data callable: loads the models once per worker, then estimates pandas batches."""

    def __init__(self, *, gpu: str, models_dir: str, exact: ExactArg, allow_tf32: bool) -> None:
        self._models = load_model_set(models_dir)
        self._target = load_gpu(gpu)
        self._exact = _exact_table(self._models, exact)
        self._allow_tf32 = allow_tf32
        self._calibration = load_calibration(self._models.models_dir)

    def __call__(self, batch: pd.DataFrame) -> pd.DataFrame:
        duration_us, source, low_confidence = _estimate(
            batch, models=self._models, target=self._target, exact=self._exact, allow_tf32=self._allow_tf32,
            calibration=self._calibration,
        )
        return batch.assign(duration_us=duration_us, estimate_source=source, low_confidence=low_confidence)


def estimate_dataset(
    ds,
    *,
    gpu: str = "h200",
    models_dir: str | os.PathLike | None = None,
    exact: ExactArg = None,
    allow_tf32: bool = False,
    concurrency: int = 1,
):
    """`estimate_trace` over a `ray.data.Dataset` of trace rows, with models loaded once per worker.

    Args:
        ds: Ray Dataset of trace rows (e.g. `ray.data.read_parquet(trace_dir)`).
        gpu, models_dir, exact, allow_tf32: as for `estimate_trace`.
        concurrency: number of estimator actors.

    Returns:
        A lazy Ray Dataset of the same rows plus `duration_us`, `estimate_source`, `low_confidence`.
    """
    resolved = resolve_models_dir(gpu, models_dir)
    load_model_set(str(resolved))  # fail here, on the driver, when the models are missing
    if isinstance(exact, (pa.Table, pd.DataFrame)):
        exact = ExactTable.from_profiles(exact)
    return ds.map_batches(
        _BatchEstimator,
        fn_constructor_kwargs={"gpu": gpu, "models_dir": str(resolved), "exact": exact, "allow_tf32": allow_tf32},
        batch_format="pandas",
        concurrency=concurrency,
    )
