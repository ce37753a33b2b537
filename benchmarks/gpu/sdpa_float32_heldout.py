"""Random float32 attention shapes, off the profile grid, timed on the GPU as a held-out set for the
SDPA model's float32 rows (the grid's float32 cases: maya/estimator/profile_grid.py).

The draws follow the SDPA grid's random 16-bit draws (heads, head size, sequence
length log-uniform over 64-8192, about 1k-64k tokens per call, causal or not) in float32 on the
memory-efficient backend, the one fused backend that takes float32 on CUDA (whose kernels need as
many key/value heads as query heads). Timed by
`maya profile`'s own code (L2 flush, CUDA events, median), written as `sdpa.parquet` for
`python benchmarks/estimator_accuracy.py --heldout DIR --repeat DIR --autotuned DIR`.

    python benchmarks/gpu/sdpa_float32_heldout.py --out DIR [--seed 1] [--draws 40]
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import torch

from maya.estimator.profile_grid import _log_uniform, _sdpa_cases
from maya.estimator.profiler import _environment, _profile_cases, _Timer, _write_rows


def draws(seed: int, count: int):
    rng = random.Random(seed)
    for _ in range(count):
        h, d = rng.choice((8, 12, 16, 20, 24, 32, 40, 48, 64)), rng.choice((64, 64, 128, 128, 96, 80))
        s = _log_uniform(rng, 64, 8192, 64)
        b = max(1, _log_uniform(rng, 1024, 65536) // s)
        yield from _sdpa_cases("efficient", b, h, h, s, d, rng.random() < 0.5, "float32")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--draws", type=int, default=40)
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    device = torch.device("cuda")
    cases = list(draws(args.seed, args.draws))
    rows, errors, _ = _profile_cases("sdpa", cases, _Timer(device), _environment(device), quick=False,
                                     seed=args.seed, from_trace=False)
    _write_rows(rows, args.out / "sdpa.parquet")
    (args.out / "command.txt").write_text(
        f"python benchmarks/gpu/sdpa_float32_heldout.py --out OUT --seed {args.seed} --draws {args.draws}\n")
    print(f"{len(rows)} rows, {errors} failed")


if __name__ == "__main__":
    main()
