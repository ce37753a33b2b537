"""A small real profile dataset timed on this machine's CPU, in the GPU profiler's Parquet layout.

Development stand-in for the GPU profiles: it lets `fit_models` and the estimator be built and
tested without a GPU, on real measurements rather than invented numbers. The durations are CPU
times, so models fitted on it must never be used to predict a GPU. Rows carry every column the
profiler writes (`<family>.parquet` and `exact.parquet`), with `gpu_name` naming the CPU.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import socket
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import torch

_REPS_TARGET_S = 0.002
"""Each signature is repeated until about this much time is measured (at least 5, at most 50 reps)."""


def _time_us(fn: Callable[[], object]) -> tuple[float, float, float, int]:
    """(median, p10, p90) of one call's wall time in microseconds, and the repetition count."""
    fn()
    start = time.perf_counter()
    fn()
    single_s = max(time.perf_counter() - start, 1e-7)
    reps = int(np.clip(_REPS_TARGET_S / single_s, 5, 50))
    samples = []
    for _ in range(reps):
        start = time.perf_counter_ns()
        fn()
        samples.append((time.perf_counter_ns() - start) / 1e3)
    p10, median, p90 = np.percentile(samples, [10, 50, 90])
    return float(median), float(p10), float(p90), reps


def _row(op: str, family: str, inputs: list[torch.Tensor], args: list, output: torch.Tensor,
         flops: float, fn: Callable[[], object]) -> dict:
    median, p10, p90, reps = _time_us(fn)
    return {
        "op": op,
        "input_shapes": [list(t.shape) for t in inputs],
        "input_dtypes": [str(t.dtype).removeprefix("torch.") for t in inputs],
        "input_strides": [list(t.stride()) for t in inputs],
        "output_shapes": [list(output.shape)],
        "output_dtypes": [str(output.dtype).removeprefix("torch.")],
        "output_strides": [list(output.stride())],
        "attrs": json.dumps({"args": args, "kwargs": {}}),
        "flops": float(flops),
        "bytes": int(sum(t.numel() * t.element_size() for t in [*inputs, output])),
        "family": family,
        "duration_us": median, "duration_us_p10": p10, "duration_us_p90": p90, "reps": reps,
        "allow_tf32": False,
    }


def _size(rng: np.random.Generator, low: int, high: int) -> int:
    """Log-uniform integer in [low, high], rounded to a multiple of 8 half of the time."""
    value = int(np.exp(rng.uniform(np.log(low), np.log(high))))
    return max(low, value // 8 * 8) if rng.random() < 0.5 else value


def _gemm_rows(rng: np.random.Generator, count: int) -> list[dict]:
    rows = []
    for i in range(count):
        m, n, k = (_size(rng, 8, 384) for _ in range(3))
        dtype = torch.float32 if rng.random() < 0.8 else torch.float64
        a = torch.randn(m, k, dtype=dtype)
        b = torch.randn(n, k, dtype=dtype).t() if rng.random() < 0.3 else torch.randn(k, n, dtype=dtype)
        kind = i % 3
        if kind == 0:
            out = torch.mm(a, b)
            rows.append(_row("aten::mm", "gemm", [a, b], [{"$t": 0}, {"$t": 1}], out, 2 * m * n * k,
                             lambda a=a, b=b: torch.mm(a, b)))
        elif kind == 1:
            bias = torch.randn(n, dtype=dtype)
            out = torch.addmm(bias, a, b)
            rows.append(_row("aten::addmm", "gemm", [bias, a, b], [{"$t": 0}, {"$t": 1}, {"$t": 2}], out,
                             2 * m * n * k + m * n, lambda bias=bias, a=a, b=b: torch.addmm(bias, a, b)))
        else:
            batch = int(rng.integers(1, 9))
            m, n, k = max(m // 2, 8), max(n // 2, 8), max(k // 2, 8)
            a = torch.randn(batch, m, k, dtype=dtype)
            b = torch.randn(batch, k, n, dtype=dtype)
            out = torch.bmm(a, b)
            rows.append(_row("aten::bmm", "gemm", [a, b], [{"$t": 0}, {"$t": 1}], out, 2 * batch * m * n * k,
                             lambda a=a, b=b: torch.bmm(a, b)))
    return rows


def _elementwise_rows(rng: np.random.Generator, count: int) -> list[dict]:
    rows = []
    for i in range(count):
        shape = (_size(rng, 4, 1024), _size(rng, 4, 1024))
        dtype = torch.float32 if rng.random() < 0.7 else torch.float64
        x = torch.randn(shape, dtype=dtype)
        y = torch.randn(shape, dtype=dtype) if rng.random() < 0.7 else torch.randn(shape[1], dtype=dtype)
        numel = x.numel()
        kind = i % 3
        if kind == 0:
            rows.append(_row("aten::add.Tensor", "elementwise", [x, y], [{"$t": 0}, {"$t": 1}], x + y, numel,
                             lambda x=x, y=y: torch.add(x, y)))
        elif kind == 1:
            rows.append(_row("aten::mul.Tensor", "elementwise", [x, y], [{"$t": 0}, {"$t": 1}], x * y, numel,
                             lambda x=x, y=y: torch.mul(x, y)))
        else:
            out = torch.nn.functional.gelu(x)
            rows.append(_row("aten::gelu", "elementwise", [x], [{"$t": 0}], out, 8 * numel,
                             lambda x=x: torch.nn.functional.gelu(x)))
    return rows


def _softmax_rows(rng: np.random.Generator, count: int) -> list[dict]:
    rows = []
    for _ in range(count):
        x = torch.randn(_size(rng, 4, 1024), _size(rng, 8, 2048))
        out = torch._softmax(x, -1, False)
        rows.append(_row("aten::_softmax", "softmax", [x], [{"$t": 0}, -1, False], out, 5 * x.numel(),
                         lambda x=x: torch._softmax(x, -1, False)))
    return rows


def write_cpu_profiles(
    profile_dir: str | os.PathLike, *, seed: int = 0, gemm: int = 180, elementwise: int = 150,
    softmax: int = 60, exact: int = 10,
) -> list[Path]:
    """Time ops on this CPU and write `<profile_dir>/{gemm,elementwise,softmax,exact}.parquet`.

    Args:
        profile_dir: directory to write into (created).
        seed: seed of the shape sampler and of torch's generator.
        gemm, elementwise, softmax: number of signatures timed for each family.
        exact: number of gemm signatures re-timed into `exact.parquet`.

    Returns:
        The paths written. Runs single-threaded (restoring torch's thread count) so timings are stable.
    """
    out_dir = Path(profile_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        tables = {
            "gemm": _gemm_rows(rng, gemm),
            "elementwise": _elementwise_rows(rng, elementwise),
            "softmax": _softmax_rows(rng, softmax),
            "exact": _gemm_rows(np.random.default_rng(seed + 1), exact),
        }
    finally:
        torch.set_num_threads(threads)
    environment = {
        "gpu_name": f"cpu:{platform.processor() or platform.machine()}",
        "torch_version": torch.__version__, "cuda_version": "", "cudnn_version": "",
        "date": datetime.date.today().isoformat(), "host": socket.gethostname(),
    }
    paths = []
    for name, rows in tables.items():
        path = out_dir / f"{name}.parquet"
        pd.DataFrame(rows).assign(**environment).to_parquet(path, index=False)
        paths.append(path)
    return paths
