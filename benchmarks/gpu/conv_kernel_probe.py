"""Which kernels cuDNN runs for each random convolution draw, with its timed row.

For the convolution draws of the given seeds (the profiler's random shapes, `maya.estimator.profile_grid`),
each signature is timed exactly as `maya profile` times it (the row `python3 -m maya.estimator.profiler
--random-only --families conv --seed S` would write), then run once more under torch.profiler to
record the names and device times of the kernels it launched. The rows are training rows like any
seed's draws; the kernel names say which algorithm cuDNN's heuristics chose, to study where the
convolution model errs (kernel names are only known on a GPU, so they are never a model feature).

    python3 benchmarks/gpu/conv_kernel_probe.py --out OUT --seeds 46,47 --seconds 500

Writes OUT/conv_kernels_seed<S>.parquet per seed (a seed stopped by --seconds keeps its rows so far).
Seed 1 is refused: its draws are the held-out set of benchmarks/estimator_accuracy.py.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

import torch

from maya.estimator import profiler
from maya.estimator.profile_grid import grid

log = logging.getLogger("conv_kernel_probe")


def kernels_of(fn) -> list[tuple[str, float]]:
    """(name, device us) of every CUDA kernel one call of `fn` launches, in launch order."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return [(e.name, float(getattr(e, "device_time", None) or getattr(e, "cuda_time", 0.0)))
            for e in sorted(events, key=lambda e: e.time_range.start)]


def _write(rows: list[dict], path: Path) -> None:
    """The profile rows with their `kernels` column (JSON [[name, device us], ...]; null if not recorded)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = profiler.PROFILE_SCHEMA.append(pa.field("kernels", pa.string()))
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path, compression="zstd")
    log.info("wrote %d rows to %s", len(rows), path)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--seeds", required=True, help="comma-separated seeds of the random draws (not 1)")
    p.add_argument("--seconds", type=float, default=500.0, help="stop after this long, keeping the rows so far")
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    seeds = [int(s) for s in args.seeds.split(",")]
    if 1 in seeds:
        raise SystemExit("seed 1 is the held-out set of benchmarks/estimator_accuracy.py; refusing")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    device = torch.device("cuda")
    env = profiler._environment(device)
    timer = profiler._Timer(device)
    deadline = time.perf_counter() + args.seconds
    for seed in seeds:
        rows, failed = [], 0
        cases = grid("conv", seed=seed, part="random")
        log.info("seed %d: %d signatures", seed, len(cases))
        for i, case in enumerate(cases):
            if time.perf_counter() > deadline:
                log.info("out of time at seed %d, signature %d", seed, i)
                break
            try:
                row = profiler._profile_one(case, timer, env, quick=False, seed=seed + i, from_trace=False)
            except Exception as exc:  # noqa: BLE001 - one failing signature must not stop the probe
                failed += 1
                log.warning("seed %d: %s failed: %s", seed, case.op, str(exc).splitlines()[0][:200])
                profiler._recover(timer)
                continue
            try:
                replay = profiler.build_replay(case.op, case.input_shapes, case.input_dtypes, case.input_strides,
                                               case.attrs, device=device, seed=seed + i)
                replay()  # the same warm-up as the timed run: cuDNN's plan is cached by then
                row["kernels"] = json.dumps(kernels_of(replay))
            except Exception as exc:  # noqa: BLE001 - the timed row stays without its kernels
                log.warning("seed %d: kernels of %s not recorded: %s", seed, case.op, str(exc).splitlines()[0][:200])
                row["kernels"] = None
            rows.append(row)
            if i % 100 == 0:
                log.info("seed %d: %d/%d", seed, i, len(cases))
        _write(rows, out / f"conv_kernels_seed{seed}.parquet")
        log.info("seed %d: %d rows, %d failed", seed, len(rows), failed)
        if time.perf_counter() > deadline:
            break


if __name__ == "__main__":
    main()
