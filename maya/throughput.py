"""`Throughput`: samples/s, tokens/s and model FLOPs utilisation (MFU) of a predicted iteration.

    MFU = F / (T * W * P)        (PaLM, Chowdhery et al. 2022, appendix B; torchtitan's `mfu`)

- F: model FLOPs of one iteration over the whole job: the `flops` of every kernel row of the
  trace, each representative rank counted once per rank it stands for (its rank class size).
- T: the iteration's predicted wall time, seconds.
- W: world_size, the number of GPUs of the job.
- P: one GPU's dense (no sparsity) bfloat16 tensor-core peak from the GPU catalog, FLOP/s.

P is the bfloat16 peak whatever dtypes the job computes in, as torchtitan does; fp16 has the same
peak on every catalog GPU. An fp32 or TF32 job therefore shows the low MFU it really gets from that
GPU, and MFU figures compare across precisions. F counts every kernel that runs, activation-checkpoint
recomputation included, so for a checkpointed model the figure is hardware FLOPs utilisation (HFU).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd
import pyarrow as pa

from maya.hardware.gpu import GpuSpec

MFU_PEAK_DTYPE = "bfloat16"
"""The catalog dtype whose dense peak is MFU's denominator."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Throughput:
    """How much work one predicted iteration does per second, and how much of the GPUs' peak it uses."""

    iteration_time_ms: float
    """Predicted wall time of one iteration, milliseconds."""
    iterations_per_s: float
    """Iterations (optimizer steps) per second."""
    samples_per_iteration: int | None
    """Samples (sequences, images) the whole job consumes per iteration; None when not given."""
    tokens_per_iteration: int | None
    """Tokens the whole job consumes per iteration; None when not given."""
    samples_per_s: float | None
    """Samples per second over the whole job; None without `samples_per_iteration`."""
    tokens_per_s: float | None
    """Tokens per second over the whole job; None without `tokens_per_iteration`."""
    model_flops_per_iteration: float | None
    """F: floating-point operations of one iteration summed over every rank; None when unknown."""
    peak_flops_per_s: float
    """P: one GPU's dense bfloat16 peak, FLOP/s."""
    mfu: float | None
    """F / (T * W * P) as a fraction (0.4 is 40%); None when F is unknown."""

    def __post_init__(self) -> None:
        if not self.iteration_time_ms > 0:
            raise ValueError(f"iteration_time_ms={self.iteration_time_ms} must be > 0")
        for name in ("samples_per_iteration", "tokens_per_iteration"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name}={value} must be >= 0")


def throughput(
    *,
    iteration_time_ms: float,
    world_size: int,
    gpu: GpuSpec,
    model_flops_per_iteration: float | None = None,
    samples_per_iteration: int | None = None,
    tokens_per_iteration: int | None = None,
) -> Throughput:
    """Throughput and MFU of an iteration of `iteration_time_ms` on `world_size` GPUs of type `gpu`.

    Formulas (module docstring): samples/s = samples_per_iteration / T, tokens/s likewise, and
    MFU = F / (T * W * P) with T in seconds and P the GPU's dense bfloat16 peak.
    """
    if world_size < 1:
        raise ValueError(f"world_size={world_size} must be >= 1")
    if not iteration_time_ms > 0:
        raise ValueError(f"iteration_time_ms={iteration_time_ms} must be > 0")
    seconds = iteration_time_ms / 1000.0
    peak_flops_per_s = gpu.peak_flops_for(MFU_PEAK_DTYPE)
    mfu = None
    if model_flops_per_iteration is not None:
        mfu = model_flops_per_iteration / (seconds * world_size * peak_flops_per_s)
    return Throughput(
        iteration_time_ms=iteration_time_ms,
        iterations_per_s=1.0 / seconds,
        samples_per_iteration=samples_per_iteration,
        tokens_per_iteration=tokens_per_iteration,
        samples_per_s=samples_per_iteration / seconds if samples_per_iteration is not None else None,
        tokens_per_s=tokens_per_iteration / seconds if tokens_per_iteration is not None else None,
        model_flops_per_iteration=model_flops_per_iteration,
        peak_flops_per_s=peak_flops_per_s,
        mfu=mfu,
    )


def model_flops_per_iteration(
    tables: Mapping[int, pa.Table | pd.DataFrame],
    iterations: int,
    rank_to_representative: Mapping[int, int] | None = None,
) -> list[float]:
    """F of each of the first `iterations` iterations: kernel-row `flops` summed over every rank of the job.

    Args:
        tables: representative rank -> its trace (needs the `kind`, `iteration` and `flops` columns).
        iterations: how many iterations to report (rows of later iterations are ignored).
        rank_to_representative: every rank of the job -> its representative; default: each traced
            rank stands for itself only.
    """
    members = Counter(rank_to_representative.values() if rank_to_representative is not None else tables.keys())
    totals = [0.0] * iterations
    for rank, table in tables.items():
        if isinstance(table, pa.Table):
            table = table.select(["kind", "iteration", "flops"]).to_pandas()
        kernels = table[table["kind"] == "kernel"]
        per_iteration = kernels.groupby("iteration")["flops"].sum()
        for index, flops in per_iteration.items():
            if 0 <= index < iterations:
                totals[int(index)] += float(flops) * members[rank]
    return totals
