"""Record every caching-allocator event of validation workloads on the GPU (torch.cuda.memory history).

For each named suite entry, runs its script in a child process with the allocator's history on
(`torch.cuda.memory._record_memory_history`, no stack traces) and writes OUT/<name>.json.gz:
`events` as [action, size, stream] in order (alloc, free_requested, free_completed, segment_alloc,
segment_free, segment_map, segment_unmap, ...), `segments` at the end as [total_size, allocated_size,
stream, is_expandable], and the script's MAYA_RESULT line. This shows where the GPU's reserved memory
comes from (which requests made new segments), to compare with the allocation sequence Maya emulates.
Only the standard library and torch are imported. On the GPU machine, from the repository root:

    python benchmarks/gpu/memory_history_probe.py --out OUT --only resnet50_fp32 llama_3b_bf16_ckpt
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "validation"))

CHILD = """
import gzip, json, runpy, sys
import torch
script, out = sys.argv[1], sys.argv[2]
torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python", max_entries=2_000_000)
sys.argv = [script, *sys.argv[3:]]
try:
    runpy.run_path(script, run_name="__main__")
finally:
    snap = torch.cuda.memory._snapshot()
    events = [[e["action"], e.get("size", 0), e.get("stream", 0)] for trace in snap["device_traces"] for e in trace]
    segments = [[s["total_size"], s["allocated_size"], s["stream"], s.get("is_expandable", False)]
                for s in snap["segments"]]
    with gzip.open(out, "wt") as f:
        json.dump({"events": events, "segments": segments,
                   "max_memory_reserved": torch.cuda.max_memory_reserved(),
                   "max_memory_allocated": torch.cuda.max_memory_allocated()}, f)
"""


def main(argv: list[str] | None = None) -> int:
    from suite import WORKLOADS

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--only", nargs="+", required=True, metavar="NAME")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    by_name = {w.name: w for w in WORKLOADS}
    for name in args.only:
        w = by_name[name]
        out = args.out / f"{name}.json.gz"
        cmd = [sys.executable, "-c", CHILD, str(w.script_path), str(out), *w.argv]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=dict(os.environ))
        result = [line for line in proc.stdout.splitlines() if line.startswith("MAYA_RESULT ")]
        print(f"{name}: rc={proc.returncode} {result[-1][:200] if result else proc.stderr[-1500:]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
