"""Depth extrapolation and where the peak is: one rank's memory parts at depths 1..N and at the full depth.

The tuner extrapolates each memory part (body, tail, optimizer step; maya.tune.accum_extrapolation)
affinely from two shallow depths (maya.tune.depth_extrapolation). That holds only once the part's
peak sits at the same kind of place at both depths. This prints, for one configuration of the
Llama-70B-class study (default: tp 1, no pipeline, FSDP over 256 H100s, micro-batch 2, 2
micro-batches, activation checkpointing), rank 0's parts at each depth, the op where its peak
allocation falls, the full depth's parts, and the full-depth peak extrapolated from each pair of
consecutive depths, with its error.

    python benchmarks/depth_peak_steady.py                       # depths 1-6 and 80 (about 4 minutes)
    python benchmarks/depth_peak_steady.py --depths 1,2,3 --full 24 --nodes 1 --args "--dim 1024 ..."
"""

import argparse
import json
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LLAMA = ("--steps 1 --seq 4096 --dim 8192 --heads 64 --vocab 128256 --precision bf16 --init-device meta --dp fsdp "
         "--tp 1 --pp 1 --checkpoint nonreentrant --batch 2 --accum 2")


def emulate_depth(args: list[str], layers: int, nodes: int, gpus_per_node: int) -> dict:
    from maya.api import emulate
    from maya.trace.store import read_rank_trace
    from maya.tune.accum_extrapolation import table_memory_segments

    trace_dir = tempfile.mkdtemp(prefix="maya-depth-")
    started = time.perf_counter()
    summary = emulate(str(ROOT / "examples" / "train_gpt.py"), [*args, "--layers", str(layers)], gpu="h100",
                      nnodes=nodes, nproc_per_node=gpus_per_node, trace_dir=trace_dir, in_process=True)
    if summary.exit_code != 0:
        raise SystemExit(f"depth {layers} failed:\n{summary.error}")
    table = read_rank_trace(trace_dir, 0)
    allocated = table["allocated_bytes"].to_pylist()
    peak_row = max(range(len(allocated)), key=allocated.__getitem__)
    return {"segments_gib": [round(x / 2**30, 3) for x in table_memory_segments(table)],
            "peak_at": f"{table['op'][peak_row].as_py()} in '{table['module'][peak_row].as_py()}' ({table['phase'][peak_row].as_py()})",
            "emulate_s": round(time.perf_counter() - started, 1)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--args", default=LLAMA, help="examples/train_gpt.py's arguments without --layers")
    p.add_argument("--depths", default="1,2,3,4,5,6")
    p.add_argument("--full", type=int, default=80, help="the full depth")
    p.add_argument("--nodes", type=int, default=32)
    p.add_argument("--gpus-per-node", type=int, default=8)
    p.add_argument("--json", metavar="PATH", help="write the figures here too")
    a = p.parse_args()
    args = a.args.split()
    depths = [int(d) for d in a.depths.split(",")]
    rows = {d: emulate_depth(args, d, a.nodes, a.gpus_per_node) for d in [*depths, a.full]}
    full_peak = max(rows[a.full]["segments_gib"])
    pairs = []
    for d1, d2 in zip(depths, depths[1:]):
        s1, s2 = rows[d1]["segments_gib"], rows[d2]["segments_gib"]
        extrapolated = max(y2 + (a.full - d2) * (y2 - y1) / (d2 - d1) for y1, y2 in zip(s1, s2))
        pairs.append({"depths": [d1, d2], "extrapolated_peak_gib": round(extrapolated, 2),
                      "error": round(extrapolated / full_peak - 1, 4)})
    figures = {"command": "python benchmarks/depth_peak_steady.py", "args": a.args, "world": f"{a.nodes} x {a.gpus_per_node} H100",
               "depths": {str(d): r for d, r in rows.items()}, "full_depth": a.full, "full_peak_gib": full_peak,
               "pairs": pairs}
    for d, r in rows.items():
        print(f"depth {d:3d}: body / tail / step {r['segments_gib']} GiB, peak at {r['peak_at']}")
    for pair in pairs:
        print(f"from depths {pair['depths']}: {pair['extrapolated_peak_gib']} GiB at depth {a.full} "
              f"(emulated {full_peak} GiB, error {pair['error']:+.1%})")
    if a.json:
        Path(a.json).write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
