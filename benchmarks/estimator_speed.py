"""How long `estimate_trace` takes on a 1,000,000-row trace (target: < 60 s on 2 cores).

    python benchmarks/estimator_speed.py [--rows 1000000] [--signatures 2000] [--models-dir DIR]

The trace is synthetic but shaped like a real one: ~2,000 distinct kernel signatures (matmuls,
elementwise, softmax, a few ops without a model) repeated in random order, plus sync rows.
Without --models-dir it uses the shipped H200 models, or else fits models on a small dataset timed
on this CPU first (not counted in the time).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from maya.estimator.cpu_profile import write_cpu_profiles
from maya.estimator.estimate import estimate_trace, source_shares
from maya.estimator.fit import fit_models
from maya.estimator.model_set import packaged_models_dir
from maya.trace import TRACE_SCHEMA


def _signature(rng: np.random.Generator, i: int) -> dict:
    m, n, k = (int(2 ** rng.uniform(6, 13)) // 8 * 8 + 8 for _ in range(3))
    dtype = "bfloat16" if rng.random() < 0.7 else "float32"
    size = 2 if dtype == "bfloat16" else 4
    kind = i % 8
    if kind < 3:
        op = ("aten::mm", "aten::addmm", "aten::bmm")[kind]
        shapes = [[m, k], [k, n]] if op != "aten::addmm" else [[n], [m, k], [k, n]]
        strides = [[s[-1], 1] if len(s) == 2 else [1] for s in shapes]
        flops, out = 2.0 * m * n * k, [[m, n]]
    elif kind < 6:
        op = ("aten::add.Tensor", "aten::mul.Tensor", "aten::gelu")[kind - 3]
        shapes = [[m, n], [m, n]] if op != "aten::gelu" else [[m, n]]
        strides = [[n, 1]] * len(shapes)
        flops, out = float(m * n), [[m, n]]
    elif kind == 6:
        op, shapes, strides, flops, out = "aten::_softmax", [[m, n]], [[n, 1]], 5.0 * m * n, [[m, n]]
    else:
        op, shapes, strides, flops, out = "aten::my_fused_kernel", [[m, n]], [[n, 1]], float(m * n), [[m, n]]
    numel = sum(int(np.prod(s)) for s in shapes + out)
    return {
        "kind": "kernel", "op": op, "input_shapes": shapes, "input_dtypes": [dtype] * len(shapes),
        "input_strides": strides, "output_shapes": out, "output_dtypes": [dtype], "output_strides": [[n, 1]],
        "attrs": json.dumps({"args": [{"$t": t} for t in range(len(shapes))], "kwargs": {}}),
        "flops": flops, "bytes": numel * size,
    }


def synthetic_trace(rows: int, signatures: int, seed: int = 0) -> pa.Table:
    """`rows` trace rows drawn from `signatures` distinct kernels plus ~1% sync rows."""
    rng = np.random.default_rng(seed)
    distinct = [_signature(rng, i) for i in range(signatures)]
    distinct.append({"kind": "sync", "op": "cuda:synchronize", "input_shapes": [], "input_dtypes": [],
                     "input_strides": [], "output_shapes": [], "output_dtypes": [], "output_strides": [],
                     "attrs": "{}", "flops": 0.0, "bytes": 0})
    for row in distinct:
        row.update(seq=0, iteration=0, phase="forward", module="", stream=0, event_id=-1,
                   allocated_bytes=0, reserved_bytes=0)
    base = pa.Table.from_pylist(distinct, schema=TRACE_SCHEMA)
    weights = np.append(np.full(signatures, 0.99 / signatures), 0.01)
    table = base.take(pa.array(rng.choice(len(distinct), size=rows, p=weights)))
    return table.set_column(0, "seq", pa.array(np.arange(rows, dtype=np.int64)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--signatures", type=int, default=2000)
    parser.add_argument("--models-dir", type=Path, default=None)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        models_dir = args.models_dir
        if models_dir is None and (packaged_models_dir("h200") / "fit_report.json").exists():
            models_dir = packaged_models_dir("h200")
        if models_dir is None:
            write_cpu_profiles(Path(scratch) / "profiles")
            models_dir = Path(scratch) / "models"
            fit_models(Path(scratch) / "profiles", models_dir, gpu="h200", iterations=300)
        trace = synthetic_trace(args.rows, args.signatures)
        estimate_trace(trace.slice(0, 1000), models_dir=models_dir)  # load models outside the timing
        start = time.perf_counter()
        df = estimate_trace(trace, models_dir=models_dir)
        seconds = time.perf_counter() - start
    print(f"estimated {len(df):,} rows ({args.signatures} signatures) in {seconds:.2f} s")
    print("time share by source:", {k: round(v, 4) for k, v in source_shares(df).items()})


if __name__ == "__main__":
    main()
