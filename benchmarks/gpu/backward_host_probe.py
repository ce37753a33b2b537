"""The host microbenchmark's backward figure by its method before 2026-12-06 and by the current one,
alternately in one process on a GPU machine: how far apart they are, and how much each varies.

Before 2026-12-06, `autograd_backward_op_us` was the time of one chain of `loss.backward()` calls of
an 8-block Linear+ReLU stack, less the forward's, divided by the backward ops that a first call
issues; from the second call on, every parameter's AccumulateGrad also added into its kept gradient
(16 more kernels), and the engine's fixed cost per call was in the figure. The current method is
`maya.estimator.host_overhead.backward_costs_us`. `ratio` is current / before per repeat; the
shipped figures measured the old way are scaled by its median (benchmarks/host_lease_means.py).

Only torch and the standard library are imported. From the repository root:

    PYTHONPATH=$PWD python3 benchmarks/gpu/backward_host_probe.py --out DIR [--repeats 5]

It writes DIR/backward_host.json. `--summarize FILE ...` (no GPU needed) pools the rows of such files
and prints the old figure over the new one per pair (median and range), the new figure's range and
the fixed cost's median: the figures docs/accuracy.md quotes, from session 35's three files.
"""

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from maya.estimator.host_overhead import MODULE_DEPTH, _count_ops, _linear_relu_stack, _time_chain, backward_costs_us


def before_fix_us(device: torch.device, n: int, sync) -> float:
    """The pre-2026-12-06 `autograd_backward_op_us` (see the module docstring)."""
    model = _linear_relu_stack(MODULE_DEPTH, device)
    inp = torch.randn(1, 16, device=device)
    forward_ops = _count_ops(lambda: model(inp).sum())
    backward_ops = max(_count_ops(lambda: model(inp).sum().backward()) - forward_ops, 1)
    fwd = _time_chain(lambda: model(inp).sum(), n, sync)
    both = _time_chain(lambda: model(inp).sum().backward(), n, sync)
    return (both - fwd) * 1e6 / (n * backward_ops)


def summary(rows: list[dict]) -> dict:
    """Pooled figures of probe rows: old / new per pair (median, min, max), the new per-op figure's
    range and the fixed cost per call's median."""
    old_over_new = [r["before_fix_op_us"] / r["op_us"] for r in rows]
    return {"pairs": len(rows), "old_over_new_median": statistics.median(old_over_new),
            "old_over_new_min": min(old_over_new), "old_over_new_max": max(old_over_new),
            "op_us_min": min(r["op_us"] for r in rows), "op_us_max": max(r["op_us"] for r in rows),
            "call_us_median": statistics.median(r["call_us"] for r in rows)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path)
    p.add_argument("--summarize", type=Path, nargs="+", metavar="FILE", help="pool these backward_host.json files")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--iterations", type=int, default=2000, help="as measure_host_overhead's default")
    args = p.parse_args()
    if args.summarize:
        rows = [r for path in args.summarize for r in json.loads(path.read_text())["rows"]]
        print(json.dumps({k: round(v, 3) for k, v in summary(rows).items()}))
        return
    if args.out is None:
        p.error("--out is required to measure")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    n = max(args.iterations // MODULE_DEPTH, 10)
    rows = []
    for i in range(args.repeats):
        before = before_fix_us(device, n, sync)
        call_us, op_us, ops = backward_costs_us(device, n, sync)
        rows.append({"repeat": i, "before_fix_op_us": before, "op_us": op_us, "call_us": call_us,
                     "ops": ops, "ratio": op_us / before})
        print(json.dumps(rows[-1]), flush=True)
    out = {
        "rows": rows,
        "median": {k: statistics.median(r[k] for r in rows) for k in ("before_fix_op_us", "op_us", "call_us", "ratio")},
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__, "cuda": torch.version.cuda,
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "backward_host.json").write_text(json.dumps(out, indent=1))
    print(json.dumps(out["median"]))


if __name__ == "__main__":
    main()
