"""Replay fixed allocation sequences on the real CUDA caching allocator and record what it reports.

The sequences are made here from fixed seeds and written with the results, so that
`tests/emulator/test_allocator_replay.py` replays the very same operations on Maya's `CachingAllocator`
(on a machine without a GPU) and compares `memory_allocated` / `memory_reserved` after every operation
with what the GPU's allocator reported. Each allocator setting runs in its own child process with
`PYTORCH_CUDA_ALLOC_CONF` set, as the allocator reads it once, at the first allocation.

Operations (one list per sequence):
    ["a", id, nbytes, stream]   torch.empty(nbytes, dtype=uint8) on stream 0 (default) or 1 (a side stream)
    ["f", id]                   drop that tensor (its block returns to the allocator at once: no other stream used it)
    ["e"]                       torch.cuda.empty_cache()
An allocation that raises torch.cuda.OutOfMemoryError is recorded as such (`oom` true) and the sequence
goes on; `ptr` is each allocation's device address (None for other operations), `stats` is
`torch.cuda.memory_stats()` after the sequence's last operation. `limit_bytes`, when set, is torch.cuda.set_per_process_memory_fraction's cap, as the allocator
computes it (fraction x total memory).

Only the standard library and torch are imported. On the GPU machine, from the repository root:

    python benchmarks/gpu/allocator_replay.py --out OUT_DIR

writes OUT_DIR/allocator_replay.json.gz (about a minute on an H200).
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import json
import os
import random
import subprocess
import sys
from pathlib import Path

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30

# name -> PYTORCH_CUDA_ALLOC_CONF ("" is the default allocator).
CONFIGS = {
    "default": "",
    "expandable": "expandable_segments:True",
    "max_split_128": "max_split_size_mb:128",
    "roundup_4": "roundup_power2_divisions:4",
}


def _size(rng: random.Random) -> int:
    """A request size: log-uniform over small (<= 1 MiB), mid (1-10 MiB) and large (10 MiB - 1 GiB) ranges."""
    kind = rng.random()
    if kind < 0.4:
        lo, hi = 1, MIB
    elif kind < 0.75:
        lo, hi = MIB, 10 * MIB
    else:
        lo, hi = 10 * MIB, GIB
    return int(lo * (hi / lo) ** rng.random())


def random_sequence(seed: int, n_ops: int, live_target: int, side_stream_share: float) -> list[list]:
    """Allocations and frees in random order that keep the live bytes around `live_target`."""
    rng = random.Random(seed)
    ops: list[list] = []
    live: dict[int, int] = {}
    live_bytes, next_id = 0, 0
    for _ in range(n_ops):
        if rng.random() < 0.01:
            ops.append(["e"])
            continue
        alloc_p = 0.8 if live_bytes < live_target / 2 else (0.5 if live_bytes < live_target else 0.2)
        if not live or rng.random() < alloc_p:
            size = _size(rng)
            stream = 1 if rng.random() < side_stream_share else 0
            ops.append(["a", next_id, size, stream])
            live[next_id] = size
            live_bytes += size
            next_id += 1
        else:
            victim = rng.choice(sorted(live))
            live_bytes -= live.pop(victim)
            ops.append(["f", victim])
    return ops


def training_sequence(seed: int, layers: int, steps: int) -> list[list]:
    """A training loop's pattern with a batch size that changes every step (what expandable segments are for).

    Parameters and optimizer state stay; each step allocates per-layer activations that grow with the
    batch, frees them in reverse (backward) while allocating and freeing gradient temporaries.
    """
    rng = random.Random(seed)
    ops: list[list] = []
    next_id = 0

    def alloc(size: int) -> int:
        nonlocal next_id
        ops.append(["a", next_id, size, 0])
        next_id += 1
        return next_id - 1

    hidden = 1024 * (1 + seed % 3)
    for _ in range(layers):  # weights (bf16) and two Adam states (fp32)
        alloc(hidden * hidden * 4 * 2)
        alloc(hidden * hidden * 4 * 4)
        alloc(hidden * hidden * 4 * 4)
    for _ in range(steps):
        batch_tokens = 512 * rng.randint(6, 12)
        acts = []
        for _ in range(layers):
            acts.append(alloc(batch_tokens * hidden * 2))
            acts.append(alloc(batch_tokens * hidden * 4 * 2))
            tmp = alloc(batch_tokens * 16 * 4)
            ops.append(["f", tmp])
        for a in reversed(acts):
            g = alloc(hidden * hidden * 4 * 2 if rng.random() < 0.3 else batch_tokens * hidden * 2)
            ops.append(["f", a])
            ops.append(["f", g])
    return ops


def sequences() -> list[dict]:
    """Every sequence replayed, with its memory cap (None: the whole GPU)."""
    return [
        {"name": "random_0", "limit_bytes": None, "ops": random_sequence(0, 3000, 24 * GIB, 0.15)},
        {"name": "random_1", "limit_bytes": None, "ops": random_sequence(1, 3000, 8 * GIB, 0.3)},
        {"name": "random_small", "limit_bytes": None, "ops": random_sequence(2, 3000, 2 * GIB, 0.1)},
        {"name": "training_0", "limit_bytes": None, "ops": training_sequence(0, 24, 6)},
        {"name": "training_1", "limit_bytes": None, "ops": training_sequence(1, 12, 8)},
        {"name": "oom_random", "limit_bytes": 6 * GIB, "ops": random_sequence(3, 2000, 8 * GIB, 0.15)},
        {"name": "oom_training", "limit_bytes": 1 * GIB, "ops": training_sequence(3, 12, 6)},
    ]


def replay(seq: dict) -> dict:
    """Run one sequence on the GPU (in this process) and return what the allocator reported after each op."""
    import torch

    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.reset_accumulated_memory_stats()
    total = torch.cuda.get_device_properties(0).total_memory
    limit = seq["limit_bytes"]
    fraction = 1.0 if limit is None else limit / total
    torch.cuda.set_per_process_memory_fraction(fraction, 0)
    side = torch.cuda.Stream()
    live: dict[int, torch.Tensor] = {}
    allocated, reserved, oom, ptrs = [], [], [], []
    for op in seq["ops"]:
        failed = False
        ptr = None
        if op[0] == "a":
            _, ident, nbytes, stream = op
            try:
                if stream:
                    with torch.cuda.stream(side):
                        live[ident] = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
                else:
                    live[ident] = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
                ptr = live[ident].data_ptr()
            except torch.cuda.OutOfMemoryError:
                failed = True
        elif op[0] == "f":
            live.pop(op[1], None)
        else:
            torch.cuda.empty_cache()
        allocated.append(torch.cuda.memory_allocated())
        reserved.append(torch.cuda.memory_reserved())
        oom.append(failed)
        ptrs.append(ptr)
    stats = torch.cuda.memory_stats()
    live.clear()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    return {
        **seq,
        "effective_limit_bytes": None if limit is None else int(fraction * total),
        "allocated": allocated,
        "reserved": reserved,
        "oom": oom,
        "ptr": ptrs,
        "stats": dict(stats),
    }


def child(config: str, out: Path) -> None:
    """Replay every sequence under the allocator setting in this process's environment."""
    import torch

    results = [replay(s) for s in sequences()]
    props = torch.cuda.get_device_properties(0)
    record = {
        "config": config,
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
        "gpu_name": props.name,
        "total_memory_bytes": props.total_memory,
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "sequences": results,
    }
    out.write_text(json.dumps(record))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="folder for allocator_replay.json.gz")
    p.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--child-out", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args.child, args.child_out)
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    runs = []
    for name in args.configs:
        part = args.out / f"replay_{name}.json"
        env = {**os.environ, "PYTORCH_CUDA_ALLOC_CONF": CONFIGS[name]}
        if not CONFIGS[name]:
            env.pop("PYTORCH_CUDA_ALLOC_CONF")
        cmd = [sys.executable, __file__, "--out", str(args.out), "--child", name, "--child-out", str(part)]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            print(f"{name}: failed\n{proc.stderr[-3000:]}", file=sys.stderr)
            runs.append({"config": name, "alloc_conf": CONFIGS[name], "error": proc.stderr[-3000:]})
            continue
        runs.append(json.loads(part.read_text()))
        part.unlink()
        print(f"{name}: {len(runs[-1]['sequences'])} sequences", file=sys.stderr, flush=True)
    out = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": [sys.executable, *sys.argv],
        "runs": runs,
    }
    with gzip.open(args.out / "allocator_replay.json.gz", "wt") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
