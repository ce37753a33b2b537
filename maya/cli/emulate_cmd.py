"""`maya emulate`: run an unmodified training script on the emulated cluster (torchrun's flags)."""

from __future__ import annotations

import argparse
import sys

from maya.hardware import available_gpus

_MIB = 1 << 20


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "emulate",
        help="run a training script on an emulated GPU and report its iterations and memory",
        description="Run SCRIPT unchanged, as torchrun would, against an emulated CUDA device.",
    )
    p.add_argument("--nnodes", type=int, default=1, help="number of nodes (torchrun --nnodes); default 1")
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1, dest="nproc_per_node",
                   help="GPUs per node (torchrun --nproc-per-node); default 1")
    p.add_argument("--gpu", default="h200", choices=available_gpus(), help="GPU to emulate; default h200")
    p.add_argument("--json", metavar="PATH", help="write the summary JSON here")
    p.add_argument("--trace-dir", metavar="DIR", help="write the trace here (default: a new temporary directory)")
    p.add_argument("script", help="the training script")
    p.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from maya.api import emulate

    try:
        summary = emulate(
            args.script,
            args.script_args,
            gpu=args.gpu,
            nnodes=args.nnodes,
            nproc_per_node=args.nproc_per_node,
            trace_dir=args.trace_dir,
        )
    except (FileNotFoundError, ValueError, NotImplementedError) as e:
        print(f"maya emulate: error: {e}", file=sys.stderr)
        return 2
    if args.json:
        summary.write_json(args.json)
    for rank in summary.emulated_ranks:
        if summary.error:
            print(f"[rank {rank}] the training script failed:\n{summary.error}", file=sys.stderr)
    print(_report(summary))
    return summary.exit_code


def _report(summary) -> str:
    lines = [f"Maya: {summary.gpu} x{summary.world_size}, emulated ranks {summary.emulated_ranks}"]
    for it in summary.iterations:
        time = f"{it.time_ms:.2f} ms" if it.time_ms is not None else "time n/a"
        lines.append(
            f"  iteration {it.index}: {time}, {it.ops} GPU ops, {it.flops / 1e12:.3f} TFLOP, "
            f"peak allocated {it.peak_allocated_bytes / _MIB:.1f} MiB, reserved {it.peak_reserved_bytes / _MIB:.1f} MiB"
        )
    lines.append(
        f"  peak allocated {summary.peak_allocated_bytes / _MIB:.1f} MiB, reserved "
        f"{summary.peak_reserved_bytes / _MIB:.1f} MiB, OOM: {'yes' if summary.oom else 'no'}"
    )
    lines.append(f"  trace: {summary.trace_dir}")
    return "\n".join(lines)
