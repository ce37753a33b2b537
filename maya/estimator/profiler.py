"""The GPU op profiler: times aten op signatures on a real device and writes them as Parquet.

Two sources of signatures: the shape grids of `maya.estimator.profile_grid` (one Parquet file per
op family) and, with `trace_dir`, every distinct kernel signature of an emulated trace
(`exact.parquet`). Each signature is replayed with `maya.estimator.replay`, warmed up, then timed
`reps` times with CUDA events, the L2 cache flushed before every run; rows keep the median and the
10th/90th percentiles. A signature that fails is logged, counted and skipped.

Only torch, numpy, pandas, pyarrow and the standard library are imported, so the profiler runs on
a bare GPU machine:

    python -m maya.estimator.profiler --out profiles/h200            # full grid, about 5 minutes
    python -m maya.estimator.profiler --out /tmp/p --quick --device cpu
    python -m maya.estimator.profiler --out profiles/exact --trace maya_out/trace
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import logging
import math
import socket
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import torch

from maya.emulator.attrs import CUDNN_BENCHMARK, CUDNN_BENCHMARK_OPS, dtype_name
from maya.emulator.op_cost import op_cost
from maya.estimator.families import SDPA_ARGS, family_of
from maya.estimator.host_overhead import measure_host_overhead
from maya.estimator.profile_grid import CUDA_ONLY_OPS, FAMILIES, ProfileCase, channels_last_strides, grid
from maya.estimator.replay import Replay, build_replay, encode_arguments

logger = logging.getLogger(__name__)

L2_FLUSH_BYTES = 256 << 20
"""Bytes written before each timed run; larger than any GPU's L2 (H200: 60 MiB), so inputs start cold."""

TIME_BUDGET_PER_SIGNATURE_MS = 40.0
"""Timed-run budget per signature: reps = budget / one run, clamped to [MIN_REPS, MAX_REPS]."""

MIN_REPS = 5
"""Fewest timed repetitions of a signature."""

MAX_REPS = 15
"""Most timed repetitions of a signature."""

QUICK_REPS = 3
"""Timed repetitions in quick mode."""

SLEEP_BEFORE_CYCLES = 1_000_000
"""Fewest GPU clock cycles (about 0.5 ms) of `torch.cuda._sleep` before ops whose host launch is slow."""

SLEEP_CYCLES_PER_MS = 1_980_000
"""SM clock cycles per millisecond for `torch.cuda._sleep` (an H200 under load runs at 1,980 MHz)."""

SLEEP_FAMILIES = frozenset({"conv", "foreach", "rnn"})
"""Families always timed behind a GPU sleep, from the grid or from a trace: a foreach op's long
tensor lists take the host longer to launch than the GPU to run, and a cuDNN RNN launches kernels for
every time step, so timed on an idle GPU it runs at the host's launch rate (twice its GPU time, and
23% apart between processes of one machine: benchmarks/gpu/rnn_heldout_sleep_h200/COMMANDS.md). A
cuDNN convolution does host work between its kernels: timed idle, 55-73% of the 0-100 us held-out
convolutions were more than 10% apart between two sessions; behind the sleep two leases agree to
0.9% (benchmarks/gpu/conv_heldout_sleep_h200/COMMANDS.md). Maya models host time apart, so a profile
records the GPU's time."""


def sleeps_before(case: ProfileCase) -> bool:
    """Whether `case` is timed behind a GPU sleep: asked for, or its grid family or its op's family in
    `SLEEP_FAMILIES` (a trace's signatures come as family "exact"; a grid may hold ops that
    `family_of` maps only once they are profiled)."""
    return case.sleep_before or case.family in SLEEP_FAMILIES or family_of(case.op) in SLEEP_FAMILIES


def sleep_cycles(once_ms: float) -> int:
    """Cycles of GPU sleep before a timed run of an op whose one untimed run took `once_ms` of wall
    time: 1.5x that (the host launches the op's kernels within it), at least SLEEP_BEFORE_CYCLES."""
    return max(SLEEP_BEFORE_CYCLES, int(1.5 * once_ms * SLEEP_CYCLES_PER_MS))


PROGRESS_EVERY = 200
"""Log a progress line every this many signatures."""

EMPTY_CACHE_ABOVE_BYTES = 32 << 30
"""Return cached allocator blocks to the driver when more than this is reserved (large grids fragment)."""

HOST_FAMILY = "host"
"""Pseudo-family: the host launch-overhead calibration, written to host_overhead.json."""

_SHAPE_LIST = pa.list_(pa.list_(pa.int64()))
PROFILE_SCHEMA = pa.schema(
    [
        pa.field("op", pa.string()),
        pa.field("input_shapes", _SHAPE_LIST),
        pa.field("input_dtypes", pa.list_(pa.string())),
        pa.field("input_strides", _SHAPE_LIST),
        pa.field("output_shapes", _SHAPE_LIST),
        pa.field("output_dtypes", pa.list_(pa.string())),
        pa.field("output_strides", _SHAPE_LIST),
        pa.field("attrs", pa.string()),  # JSON, as in the trace
        pa.field("flops", pa.float64()),
        pa.field("bytes", pa.int64()),
        pa.field("family", pa.string()),  # grid family, or "exact" for trace signatures
        pa.field("duration_us", pa.float64()),  # median of the timed repetitions
        pa.field("duration_us_p10", pa.float64()),
        pa.field("duration_us_p90", pa.float64()),
        pa.field("reps", pa.int32()),  # timed repetitions
        pa.field("allow_tf32", pa.bool_()),  # TF32 allowed for fp32 matmul and cuDNN while timing
        # Timed behind a GPU sleep (`sleeps_before`, --sleep-before); null in files written before the
        # column existed (the shipped convolution files say it explicitly: features.timed_idle).
        pa.field("sleep_before", pa.bool_()),
        pa.field("gpu_name", pa.string()),
        pa.field("torch_version", pa.string()),
        pa.field("cuda_version", pa.string()),
        pa.field("cudnn_version", pa.string()),
        pa.field("date", pa.string()),  # ISO 8601, UTC, when the run started
        pa.field("host", pa.string()),  # hostname
    ]
)
"""One row per timed signature: the trace-row signature columns plus the measurement."""


class DeviceLostError(RuntimeError):
    """The CUDA context is unusable (illegal address, device-side assert): the run must stop."""


class _Timer:
    """Times a replay on one device: CUDA events with an L2 flush, or perf_counter on the CPU."""

    def __init__(self, device: torch.device, flush_l2: bool = True, sleep_before: bool = False):
        self.device = device
        self.sleep_before = sleep_before  # every op behind a GPU sleep, not only `sleeps_before`'s
        self.is_cuda = device.type == "cuda"
        self.flush_buffer = (
            torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.float32, device=device)
            if self.is_cuda and flush_l2
            else None
        )
        self.can_sleep = self.is_cuda and hasattr(torch.cuda, "_sleep")

    def synchronize(self) -> None:
        if self.is_cuda:
            torch.cuda.synchronize(self.device)

    def time_once_ms(self, fn: Callable[[], Any]) -> float:
        """Wall time of one run, synchronised: used to choose the repetition count."""
        self.synchronize()
        start = time.perf_counter()
        fn()
        self.synchronize()
        return (time.perf_counter() - start) * 1e3

    def time_us(
        self, fn: Callable[[], Any], reps: int, sleep: int = 0, before: Callable[[], Any] | None = None
    ) -> list[float]:
        """Durations of `reps` runs, in microseconds, each after an L2 flush (then `before`, untimed,
        and `sleep` GPU clock cycles of sleep, which hide the host's launch of the run behind them)."""
        if not self.is_cuda:
            durations = []
            for _ in range(reps):
                if before is not None:
                    before()
                start = time.perf_counter()
                fn()
                durations.append((time.perf_counter() - start) * 1e6)
            return durations
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for start, end in zip(starts, ends):
            if self.flush_buffer is not None:
                self.flush_buffer.zero_()
            if before is not None:
                before()
            if sleep and self.can_sleep:
                torch.cuda._sleep(sleep)
            start.record()
            fn()
            end.record()
        ends[-1].synchronize()
        return [start.elapsed_time(end) * 1e3 for start, end in zip(starts, ends)]


class NoGpuError(RuntimeError):
    """`maya profile` was asked to time CUDA kernels on a machine where torch sees no GPU."""


def run_profile(
    out_dir: str | Path,
    *,
    families: Sequence[str] | None = None,
    device: str = "cuda",
    quick: bool = False,
    trace_dir: str | Path | None = None,
    seed: int = 0,
    flush_l2: bool = True,
    random_only: bool = False,
    cnn_layouts: bool = False,
    cudnn_benchmark: bool = False,
    shard: tuple[int, int] = (0, 1),
    no_tf32: bool = False,
    dtypes: Sequence[str] | None = None,
    ops: Sequence[str] | None = None,
    flip_grad_layout: bool = False,
    attention_dropout: float | None = None,
    sleep_before: bool = False,
) -> Path:
    """Time op signatures on `device` and write them under `out_dir`.

    Args:
        out_dir: output directory; gets `<family>.parquet` per grid family, `exact.parquet` for a
            trace, and `host_overhead.json`.
        families: grid families to run (see `profile_grid.FAMILIES`, plus "host"); None runs all,
            or none when `trace_dir` is given.
        device: "cuda" (CUDA events, L2 flush) or "cpu" (perf_counter; CUDA-only ops skipped).
        quick: tiny grids and few repetitions, for tests.
        trace_dir: an emulated trace directory; its distinct kernel signatures are timed.
        seed: seeds the random shapes and tensor contents.
        flush_l2: flush the L2 cache before every timed run (cold inputs); False keeps them warm.
        random_only: time only each family's random draws (shapes off the fixed grid), e.g. with
            another seed, as a held-out set for `benchmarks/estimator_accuracy.py`.
        cnn_layouts: time only the fixed grids' CNN-layout cases (4-D tensors in NCHW and
            channels-last: `profile_grid.CNN_ACTIVATIONS`, of the copy and reduction families; batch
            and group norms, `profile_grid._cnn_layout_norms`), to extend a profile made before the
            grids had them.
        cudnn_benchmark: time the grids' convolutions with `torch.backends.cudnn.benchmark` on
            (cuDNN's autotuned algorithm, as in scripts that set it); their rows carry the
            `cudnn_benchmark` attrs key that the emulator records for such scripts. A trace's
            signatures follow their own attrs either way.
        shard: (i, n): time only every n-th grid signature starting at the i-th, to split a long
            profile over GPUs or calls (concatenate the shards' Parquet files afterwards).
        no_tf32: time the grids' float32 cases with TF32 off (`torch.backends.cuda.matmul.allow_tf32`
            and `torch.backends.cudnn.allow_tf32` False), as scripts that turn it off run them; the
            grids otherwise follow PyTorch's defaults (TF32 on for cuDNN's float32 RNNs). A trace's
            signatures follow its own recorded setting either way.
        dtypes: time only the grids' cases whose first tensor has one of these dtypes ("float32"),
            to extend a profile after a grid gained cases of a dtype; None: every case.
        ops: time only the grids' cases of these ops ("aten::_amp_update_scale_"), to extend a
            profile after a grid gained ops; None: every case.
        flip_grad_layout: time only the grids' convolution backward cases, each with its grad_output
            in the other memory format than its input's (channels-last against NCHW), as models
            that permute to NHWC around a convolution (ConvNeXt's LayerNorm and Linear) hand it.
        attention_dropout: time only the grids' fused attention cases (forward and backward), each
            with this dropout_p, as models with attention dropout run them in training (BERT, GPT-2
            and `nn.TransformerEncoderLayer` default to 0.1); None: the grids' own (no dropout).
        sleep_before: time every case, from the grids or a trace, behind a GPU sleep, as the
            `SLEEP_FAMILIES` always are: the GPU's time without the gaps in which an idle GPU waits
            for the host between an op's kernels. Each row records whether it was (`sleep_before`).

    Returns:
        `out_dir` as a Path.
    """
    if attention_dropout is not None and not 0 < attention_dropout < 1:
        raise ValueError(f"attention_dropout {attention_dropout}: want 0 < dropout_p < 1")
    if random_only and cnn_layouts:
        raise ValueError("random_only and cnn_layouts each select a part of the grids: pick one")
    index, count = shard
    if not 0 <= index < count:
        raise ValueError(f"shard {index}/{count}: want 0 <= index < count")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    torch_device = torch.device(device)
    if torch_device.type == "cuda" and not torch.cuda.is_available():
        build = f"CUDA {torch.version.cuda} build" if torch.version.cuda else "CPU-only build"
        raise NoGpuError(f"no CUDA GPU here: torch.cuda.is_available() is False (torch {torch.__version__}, a "
                         f"{build}); run it on the machine with the GPU to profile, or with --device cpu to time "
                         "the host's CPU (for tests)")
    if families is None:
        families = [] if trace_dir is not None else [*FAMILIES, HOST_FAMILY]
    unknown = sorted(set(families) - set(FAMILIES) - {HOST_FAMILY})
    if unknown:
        raise ValueError(f"unknown families {unknown}; known: {', '.join([*FAMILIES, HOST_FAMILY])}")
    part = "random" if random_only else "cnn" if cnn_layouts else "all"
    grids = {family: grid(family, quick=quick, seed=seed, part=part) for family in families if family != HOST_FAMILY}
    if ops is not None:
        missing = sorted(set(ops) - {case.op for cases in grids.values() for case in cases})
        if missing:
            raise ValueError(f"ops {missing} have no case in the grids of families {list(families)}")
    env = _environment(torch_device)
    logger.info("profiling on %s (torch %s, CUDA %s, cuDNN %s) into %s", env["gpu_name"],
                env["torch_version"], env["cuda_version"], env["cudnn_version"], out_dir)  # fmt: skip
    timer = _Timer(torch_device, flush_l2=flush_l2, sleep_before=sleep_before)
    run_start = time.perf_counter()
    errors_by_family: dict[str, int] = {}

    for family in families:
        if family == HOST_FAMILY:
            try:
                overhead = measure_host_overhead(device)
            except Exception:  # noqa: BLE001 - the calibration must not lose the op timings
                logger.exception("host overhead calibration failed")
                continue
            (out_dir / "host_overhead.json").write_text(json.dumps({**overhead, **env}, indent=2))
            continue
        cases = grids[family]
        if cudnn_benchmark:
            cases = [_with_cudnn_benchmark(case) for case in cases]
        if no_tf32:
            cases = [dataclasses.replace(case, allow_tf32=False) for case in cases]
        if flip_grad_layout:
            cases = [flipped for flipped in map(with_flipped_grad_layout, cases) if flipped is not None]
        if attention_dropout is not None:
            cases = [c for c in (with_attention_dropout(case, attention_dropout) for case in cases) if c is not None]
        if dtypes is not None:
            cases = [case for case in cases if case.input_dtypes[:1] and case.input_dtypes[0] in dtypes]
        if ops is not None:
            cases = [case for case in cases if case.op in ops]
        cases = cases[shard[0]::shard[1]]
        rows, errors, lost = _profile_cases(family, cases, timer, env, quick=quick, seed=seed, from_trace=False)
        errors_by_family[family] = errors
        _write_rows(rows, out_dir / f"{family}.parquet")
        if lost:
            break
    else:
        lost = False

    if trace_dir is not None and not lost:
        cases = read_trace_signatures(trace_dir)
        rows, errors, lost = _profile_cases("exact", cases, timer, env, quick=quick, seed=seed, from_trace=True)
        errors_by_family["exact"] = errors
        _write_rows(rows, out_dir / "exact.parquet")

    if lost:
        logger.error("the CUDA context was lost; families after the failing one were not profiled "
                     "(rows timed so far are written)")  # fmt: skip

    logger.info("profile finished in %.1f s; failed signatures per family: %s",
                time.perf_counter() - run_start, errors_by_family)  # fmt: skip
    return out_dir


def read_trace_signatures(trace_dir: str | Path) -> list[ProfileCase]:
    """Distinct kernel signatures of every `rank=*/trace.parquet` under `trace_dir`.

    TF32 is taken from the trace's meta.json key "allow_tf32" when present, else PyTorch's
    default for matmuls (off).
    """
    trace_dir = Path(trace_dir)
    paths = sorted(trace_dir.glob("rank=*/trace.parquet"))
    if not paths:
        raise FileNotFoundError(f"no rank=*/trace.parquet under {trace_dir}")
    meta_path = trace_dir / "meta.json"
    allow_tf32 = bool(json.loads(meta_path.read_text()).get("allow_tf32", False)) if meta_path.exists() else False
    columns = ["kind", "op", "input_shapes", "input_dtypes", "input_strides", "attrs"]
    seen: dict[str, ProfileCase] = {}
    for path in paths:
        table = pq.read_table(path, columns=columns)
        for row in table.to_pylist():
            if row["kind"] != "kernel":
                continue
            key = json.dumps([row[c] for c in columns[1:]])
            if key not in seen:
                seen[key] = ProfileCase(
                    family="exact",
                    op=row["op"],
                    input_shapes=tuple(tuple(s) for s in row["input_shapes"] or ()),
                    input_dtypes=tuple(row["input_dtypes"] or ()),
                    input_strides=tuple(tuple(s) for s in row["input_strides"] or ()),
                    attrs=json.loads(row["attrs"]) if row["attrs"] else {"args": [], "kwargs": {}},
                    allow_tf32=allow_tf32,
                )
    logger.info("%d distinct kernel signatures in %d rank traces under %s", len(seen), len(paths), trace_dir)
    return list(seen.values())


def _profile_cases(
    family: str,
    cases: Sequence[ProfileCase],
    timer: _Timer,
    env: dict[str, str],
    *,
    quick: bool,
    seed: int,
    from_trace: bool,
) -> tuple[list[dict[str, Any]], int, bool]:
    """Time every case; returns (rows, number of failed signatures, whether the device was lost)."""
    rows: list[dict[str, Any]] = []
    errors = skipped = 0
    start = time.perf_counter()
    logger.info("family %s: %d signatures", family, len(cases))
    for i, case in enumerate(cases):
        if i and i % PROGRESS_EVERY == 0:
            logger.info("family %s: %d/%d signatures, %.1f s, %d failed",
                        family, i, len(cases), time.perf_counter() - start, errors)  # fmt: skip
        if timer.device.type != "cuda" and case.op in CUDA_ONLY_OPS:
            skipped += 1
            continue
        try:
            rows.append(_profile_one(case, timer, env, quick=quick, seed=seed + i, from_trace=from_trace))
        except Exception as exc:  # noqa: BLE001 - a failing signature must not stop the run
            errors += 1
            logger.warning("family %s: %s %s failed: %s: %s", family, case.op,
                           list(case.input_shapes), type(exc).__name__, str(exc).splitlines()[0][:300])  # fmt: skip
            try:
                _recover(timer)
            except DeviceLostError as lost:
                logger.error("family %s: stopping after %d/%d signatures: %s", family, i, len(cases), lost)
                return rows, errors, True
        if timer.is_cuda and torch.cuda.memory_reserved(timer.device) > EMPTY_CACHE_ABOVE_BYTES:
            torch.cuda.empty_cache()
    if skipped:
        logger.info("family %s: skipped %d CUDA-only signatures on %s", family, skipped, timer.device)
    logger.info("family %s: %d timed, %d failed, %d skipped in %.1f s",
                family, len(rows), errors, skipped, time.perf_counter() - start)  # fmt: skip
    return rows, errors, False


def _with_cudnn_benchmark(case: ProfileCase) -> ProfileCase:
    """`case` marked for timing under `torch.backends.cudnn.benchmark` when its op is a convolution."""
    if case.op not in CUDNN_BENCHMARK_OPS:
        return case
    return dataclasses.replace(case, attrs={**case.attrs, CUDNN_BENCHMARK: True})


def with_flipped_grad_layout(case: ProfileCase) -> ProfileCase | None:
    """A convolution backward `case` with its 4-d grad_output in the other memory format (NCHW <->
    channels-last) than the grid gave it; None for any other case, or where both formats coincide."""
    if case.op != "aten::convolution_backward" or len(case.input_shapes[0]) != 4:
        return None
    n, c, h, w = case.input_shapes[0]
    if c == 1 or h * w == 1:
        return None
    contiguous, channels_last = (c * h * w, h * w, w, 1), channels_last_strides(n, c, h, w)
    strides = case.input_strides[0]
    if strides not in (contiguous, channels_last):
        return None
    flipped = channels_last if strides == contiguous else contiguous
    return dataclasses.replace(case, input_strides=(flipped, *case.input_strides[1:]))


def with_attention_dropout(case: ProfileCase, dropout_p: float) -> ProfileCase | None:
    """A fused attention `case` (a CUDA backend's forward or backward) with `dropout_p`, encoded as
    the dispatcher records it; None for any other case."""
    position = SDPA_ARGS[case.op][2] if case.op in SDPA_ARGS else None
    if position is None or len(case.attrs["args"]) < position:
        return None
    # A forward's dropout_p may be the last argument the grid kept (later ones defaulted).
    args = [*case.attrs["args"][:position], dropout_p, *case.attrs["args"][position + 1:]]
    return dataclasses.replace(case, attrs={**case.attrs, "args": args})


def _profile_one(
    case: ProfileCase, timer: _Timer, env: dict[str, str], *, quick: bool, seed: int, from_trace: bool
) -> dict[str, Any]:
    _set_tf32(case.allow_tf32)
    # The first (warm-up) run below autotunes a benchmarked convolution; cuDNN caches the choice per shape.
    torch.backends.cudnn.benchmark = bool(case.attrs.get(CUDNN_BENCHMARK, False))
    replay = build_replay(
        case.op, case.input_shapes, case.input_dtypes, case.input_strides, case.attrs,
        device=timer.device, seed=seed,
    )  # fmt: skip
    outputs = _flatten_outputs(replay())  # first run: warm-up (cuDNN plans, autotuning) and outputs
    once_ms = timer.time_once_ms(replay)
    if quick:
        reps = QUICK_REPS
    else:
        reps = max(MIN_REPS, min(MAX_REPS, int(TIME_BUDGET_PER_SIGNATURE_MS / max(once_ms, 1e-3))))
    sleep = sleep_cycles(once_ms) if timer.sleep_before or sleeps_before(case) else 0
    durations = sorted(timer.time_us(replay, reps, sleep))
    row = _signature_columns(case, replay, outputs, from_trace)
    row.update(
        family=case.family,
        duration_us=statistics.median(durations),
        duration_us_p10=_percentile(durations, 0.10),
        duration_us_p90=_percentile(durations, 0.90),
        reps=reps,
        allow_tf32=case.allow_tf32,
        sleep_before=bool(sleep) and timer.can_sleep,
        **env,
    )
    return row


def _signature_columns(case: ProfileCase, replay: Replay, outputs: list[torch.Tensor], from_trace: bool) -> dict:
    """Trace-row columns: the trace's own for trace signatures, else re-encoded from the real
    arguments (the forward-first substitution of fused backward ops changes them)."""
    if from_trace:
        attrs, shapes, dtypes, strides = case.attrs, case.input_shapes, case.input_dtypes, case.input_strides
    else:
        attrs, shapes, dtypes, strides = encode_arguments(replay.args, replay.kwargs)
        # Keys beside the arguments (cudnn_benchmark, say) describe how the op ran: keep them.
        attrs.update({k: v for k, v in case.attrs.items() if k not in ("args", "kwargs")})
    out_shapes = [list(t.shape) for t in outputs]
    out_dtypes = [dtype_name(t.dtype) for t in outputs]
    flops, nbytes = op_cost(case.op, shapes, dtypes, out_shapes, out_dtypes, attrs)
    return {
        "op": case.op,
        "input_shapes": [list(s) for s in shapes],
        "input_dtypes": list(dtypes),
        "input_strides": [list(s) for s in strides],
        "output_shapes": out_shapes,
        "output_dtypes": out_dtypes,
        "output_strides": [list(t.stride()) for t in outputs],
        "attrs": json.dumps(attrs),
        "flops": float(flops),
        "bytes": int(nbytes),
    }


def _flatten_outputs(result: Any) -> list[torch.Tensor]:
    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, (list, tuple)):
        return [t for item in result for t in _flatten_outputs(item)]
    return []


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile of already sorted values."""
    position = q * (len(sorted_values) - 1)
    lo, hi = math.floor(position), math.ceil(position)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (position - lo)


def _set_tf32(allow: bool) -> None:
    torch.backends.cuda.matmul.allow_tf32 = allow
    torch.backends.cudnn.allow_tf32 = allow


def _recover(timer: _Timer) -> None:
    """After a failure: free cached memory, and stop the run if the CUDA context is broken."""
    if not timer.is_cuda:
        return
    try:
        timer.synchronize()
        torch.cuda.empty_cache()
    except Exception as exc:  # an illegal address or device assert poisons the context for good
        raise DeviceLostError(f"the CUDA context is unusable after a failed signature: {exc}") from exc


def _write_rows(rows: list[dict[str, Any]], path: Path) -> None:
    table = pa.Table.from_pylist(rows, schema=PROFILE_SCHEMA)
    tmp = path.with_suffix(".parquet.tmp")
    pq.write_table(table, tmp, compression="zstd")
    tmp.replace(path)
    logger.info("wrote %d rows to %s", len(rows), path)


def _environment(device: torch.device) -> dict[str, str]:
    """Columns identifying the machine and software the timings come from."""
    if device.type == "cuda":
        gpu_name = torch.cuda.get_device_name(device)
    else:
        gpu_name = f"cpu ({torch.get_num_threads()} threads)"
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {
        "gpu_name": gpu_name,
        "torch_version": torch.__version__,
        "cuda_version": str(torch.version.cuda or ""),
        "cudnn_version": str(cudnn or ""),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
    }


def _parse_families(value: str) -> list[str]:
    return [f.strip() for f in value.split(",") if f.strip()]


def build_parser() -> argparse.ArgumentParser:
    """The command line of `python -m maya.estimator.profiler` (and `maya profile`)."""
    parser = argparse.ArgumentParser(
        prog="python -m maya.estimator.profiler",
        description="Time aten op signatures on a GPU (shape grids, or the kernels of a trace) and write Parquet.",
    )
    parser.add_argument("--out", required=True, type=Path, help="output directory")
    parser.add_argument(
        "--families", type=_parse_families, default=None,
        help=f"comma-separated families (default: all): {','.join([*FAMILIES, HOST_FAMILY])}",
    )  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="tiny grids and 3 repetitions (tests)")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="device to time on")
    parser.add_argument("--trace", type=Path, default=None, help="trace directory: time its kernel signatures")
    parser.add_argument("--seed", type=int, default=0, help="seed for random shapes and tensor contents")
    parser.add_argument(
        "--random-only", action="store_true",
        help="time only the random draws of each family (shapes off the fixed grid): a held-out set with another --seed",
    )
    parser.add_argument(
        "--cnn-layouts", action="store_true",
        help="time only the fixed grids' CNN-layout cases (4-D copies, reductions, batch and group norms, NCHW and channels-last)",
    )
    parser.add_argument(
        "--warm-l2", action="store_true",
        help="do not flush the L2 cache between runs (inputs stay cache-resident, as when the previous op wrote them)",
    )
    parser.add_argument(
        "--cudnn-benchmark", action="store_true",
        help="time the grids' convolutions with torch.backends.cudnn.benchmark on (autotuned algorithms), "
        "as scripts that set it run them",
    )
    parser.add_argument(
        "--shard", type=_parse_shard, default=(0, 1), metavar="I/N",
        help="time only every N-th grid signature from the I-th (0-based), e.g. 0/2 and 1/2 on two GPUs",
    )
    parser.add_argument(
        "--dtypes", type=lambda value: tuple(value.split(",")), default=None, metavar="DTYPE[,DTYPE]",
        help="time only the grid cases whose first tensor has one of these dtypes, e.g. float32",
    )
    parser.add_argument(
        "--ops", type=lambda value: tuple(value.split(",")), default=None, metavar="OP[,OP]",
        help="time only the grid cases of these ops, e.g. aten::_amp_update_scale_ (to extend a profile after a "
        "grid gained ops)",
    )
    parser.add_argument(
        "--no-tf32", action="store_true",
        help="time the grids' float32 cases with TF32 off, as scripts that set torch.backends.cudnn.allow_tf32 "
        "and torch.backends.cuda.matmul.allow_tf32 to False run them",
    )
    parser.add_argument(
        "--flip-grad-layout", action="store_true",
        help="time only the convolution backward cases, with grad_output in the other memory format than the "
        "input's (NCHW against channels-last), as models that permute to NHWC around a convolution hand it",
    )
    parser.add_argument(
        "--attention-dropout", type=float, default=None, metavar="P",
        help="time only the fused attention cases (forward and backward), each with dropout_p P, as models with "
        "attention dropout (BERT, GPT-2: 0.1) run them in training",
    )
    parser.add_argument(
        "--sleep-before", action="store_true",
        help="time every case behind a GPU sleep, as convolutions, RNN and foreach ops always are (the GPU's time without the "
        "host's launch gaps between an op's kernels); each row records it (sleep_before)",
    )
    return parser


def _parse_shard(value: str) -> tuple[int, int]:
    try:
        index, count = (int(part) for part in value.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard {value!r}: want I/N, such as 0/2") from None
    if not 0 <= index < count:
        raise argparse.ArgumentTypeError(f"--shard {value!r}: want 0 <= I < N")
    return index, count


def run_from_args(args: argparse.Namespace) -> Path:
    """`run_profile` with the options of `build_parser`."""
    return run_profile(
        args.out, families=args.families, device=args.device, quick=args.quick, trace_dir=args.trace, seed=args.seed,
        flush_l2=not args.warm_l2, random_only=args.random_only, cnn_layouts=args.cnn_layouts,
        cudnn_benchmark=args.cudnn_benchmark,
        shard=args.shard, no_tf32=args.no_tf32, dtypes=args.dtypes, ops=args.ops, flip_grad_layout=args.flip_grad_layout,
        attention_dropout=args.attention_dropout, sleep_before=args.sleep_before,
    )


def main(argv: Iterable[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    args = build_parser().parse_args(None if argv is None else list(argv))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    print(run_from_args(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
