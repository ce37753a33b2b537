"""`EmulationSummary`: the JSON contract of `maya emulate --json` and `maya simulate --json` (see DESIGN.md)."""

from __future__ import annotations

import dataclasses
import json
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path

from maya.hardware import load_gpu
from maya.throughput import MFU_PEAK_DTYPE, Throughput, throughput


def peak_over(iterations, attribute: str) -> int:
    """The largest `attribute` (`peak_allocated_bytes`, `peak_reserved_bytes`) over per-iteration
    figures (an `EmulationSummary`'s or a rank's `IterationStats`), 0 when there are none."""
    return max((getattr(it, attribute) for it in iterations), default=0)


HOST_BOUND_SHARE = 0.2
"""A step whose breakdown is host-bound for this share or more is set in part by the host's CPU: the
summary page says so, and `maya emulate` / `maya simulate` give its time on a fast and a slow machine
(`host_speed_range_ms`). In the validation suite, the host-bound steps of the tiny MLPs, MoE, the CIFAR
ResNet-18 and GPT-2 under FSDP2 on one GPU varied by 70-134% between H200 machines, while 9 of its 30
workloads repeated within 2% (benchmarks/results/ground_truth_repeatability_h200.md)."""

DERIVED_KEYS = frozenset({
    "median_iteration_ms", "peak_allocated_bytes", "peak_reserved_bytes", "memory_capacity_bytes", "iterations_per_s",
    "samples_per_s", "tokens_per_s", "mfu", "mfu_peak_flops_per_s",
})
"""Keys of `EmulationSummary.to_dict` that it computes from the fields (`model_flops_per_iteration`
aside: a prediction supplies it through `extra`, and it is kept there)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class IterationSummary:
    """One training iteration (from the end of the previous one to the end of its optimizer step)."""

    index: int
    """Iteration number, from 0."""
    time_ms: float | None
    """Predicted wall time in milliseconds on the slowest rank; None before timing is available."""
    peak_allocated_bytes: int
    """Peak `torch.cuda.memory_allocated()` within the iteration, bytes."""
    peak_reserved_bytes: int
    """Peak `torch.cuda.memory_reserved()` within the iteration, bytes."""
    ops: int
    """GPU operations (kernels and copies) issued in the iteration."""
    flops: float
    """Floating-point operations of those kernels."""


@dataclass(frozen=True, kw_only=True, slots=True)
class EmulationSummary:
    """What `maya emulate` and `maya simulate` report for a run."""

    world_size: int
    """Number of ranks in the emulated world."""
    gpu: str
    """Catalog key of the GPU the times are predicted for (the emulated one for `maya emulate`)."""
    emulated_ranks: list[int]
    """Ranks that were actually run (the others are represented by them)."""
    iterations: list[IterationSummary]
    """Per-iteration figures."""
    oom: bool
    """Whether the script ran out of (emulated) GPU memory."""
    trace_dir: str
    """Directory holding the trace (complete only when it has meta.json)."""
    exit_code: int = 0
    """The script's exit status (non-zero when it failed or ran out of memory)."""
    error: str | None = None
    """The failing rank's traceback, if any."""
    extra: dict = field(default_factory=dict)
    """Further figures (estimate sources, breakdown) that later stages add."""
    samples_per_iteration: int | None = None
    """Samples (sequences, images) the whole job consumes per iteration, when the caller knows it."""
    tokens_per_iteration: int | None = None
    """Tokens the whole job consumes per iteration, when the caller knows it."""

    @property
    def median_iteration_ms(self) -> float | None:
        times = [it.time_ms for it in self.iterations if it.time_ms is not None]
        return statistics.median(times) if times else None

    @property
    def peak_allocated_bytes(self) -> int:
        return peak_over(self.iterations, "peak_allocated_bytes")

    @property
    def peak_reserved_bytes(self) -> int:
        return peak_over(self.iterations, "peak_reserved_bytes")

    @property
    def memory_capacity_bytes(self) -> int:
        """Device memory of one `gpu`, bytes (what `get_device_properties().total_memory` reports)."""
        return load_gpu(self.gpu).total_memory_bytes

    @property
    def model_flops_per_iteration(self) -> float | None:
        """FLOPs of one (median) iteration over every rank of the job; None when unknown.

        The prediction supplies it (`extra["model_flops_per_iteration"]`); a one-rank run's own
        iteration `flops` are the same figure.
        """
        if self.extra.get("model_flops_per_iteration") is not None:
            return float(self.extra["model_flops_per_iteration"])
        timed = [it.flops for it in self.iterations if it.time_ms is not None]
        if self.world_size == 1 and timed:
            return float(statistics.median(timed))
        return None

    @property
    def throughput(self) -> Throughput | None:
        """Samples/s, tokens/s and MFU at the median iteration time; None before timing is available."""
        time_ms = self.median_iteration_ms
        if not time_ms:
            return None
        return throughput(
            iteration_time_ms=time_ms,
            world_size=self.world_size,
            gpu=load_gpu(self.gpu),
            model_flops_per_iteration=self.model_flops_per_iteration,
            samples_per_iteration=self.samples_per_iteration,
            tokens_per_iteration=self.tokens_per_iteration,
        )

    @classmethod
    def from_dict(cls, d: dict) -> EmulationSummary:
        """The summary `to_dict` wrote (a `maya emulate --json` or `maya simulate --json` file's object):
        its fields back, the figures `to_dict` derives from them dropped, every other key in `extra`.

        Raises:
            ValueError: `d` lacks a key of DESIGN.md's contract, or an iteration is malformed.
        """
        missing = [k for k in ("world_size", "gpu", "emulated_ranks", "iterations", "oom", "trace_dir") if k not in d]
        if missing:
            raise ValueError(f"not a `maya emulate --json` summary: no {', '.join(missing)}")
        try:
            iterations = [IterationSummary(**it) for it in d["iterations"]]
        except TypeError as e:
            raise ValueError(f"not a `maya emulate --json` summary: an iteration is malformed ({e})") from None
        fields = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        return cls(
            world_size=d["world_size"], gpu=d["gpu"], emulated_ranks=list(d["emulated_ranks"]), iterations=iterations,
            oom=d["oom"], trace_dir=d["trace_dir"], exit_code=d.get("exit_code", 0), error=d.get("error"),
            samples_per_iteration=d.get("samples_per_iteration"), tokens_per_iteration=d.get("tokens_per_iteration"),
            extra={k: v for k, v in d.items() if k not in fields and k not in DERIVED_KEYS},
        )

    def to_dict(self) -> dict:
        """The JSON object of DESIGN.md's contract, plus `exit_code`, `error`, throughput, MFU and extras."""
        d = {
            "world_size": self.world_size,
            "gpu": self.gpu,
            "emulated_ranks": self.emulated_ranks,
            "iterations": [asdict(it) for it in self.iterations],
            "median_iteration_ms": self.median_iteration_ms,
            "peak_allocated_bytes": self.peak_allocated_bytes,
            "peak_reserved_bytes": self.peak_reserved_bytes,
            "oom": self.oom,
            "trace_dir": self.trace_dir,
            "exit_code": self.exit_code,
            "error": self.error,
            "memory_capacity_bytes": self.memory_capacity_bytes,
        }
        d.update(self.extra)
        rate = self.throughput
        d.update({
            "samples_per_iteration": self.samples_per_iteration,
            "tokens_per_iteration": self.tokens_per_iteration,
            "model_flops_per_iteration": self.model_flops_per_iteration,
            "iterations_per_s": rate.iterations_per_s if rate else None,
            "samples_per_s": rate.samples_per_s if rate else None,
            "tokens_per_s": rate.tokens_per_s if rate else None,
            "mfu": rate.mfu if rate else None,
            "mfu_peak_flops_per_s": load_gpu(self.gpu).peak_flops_for(MFU_PEAK_DTYPE),
        })
        return d

    def write_json(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n")
