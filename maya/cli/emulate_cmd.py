"""`maya emulate`: run an unmodified training script on the emulated cluster (torchrun's flags)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from maya.cli.options import add_host_profile_option, add_throughput_options
from maya.hardware import available_gpus


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
    p.add_argument("--trace-dir", metavar="DIR",
                   help="write the trace here, replacing the trace an earlier run left there (default: a new "
                        "temporary directory)")
    add_throughput_options(p)
    p.add_argument("--no-dedup", action="store_true",
                   help="emulate every rank instead of one rank per class of identical ranks")
    p.add_argument("--verify-dedup", action="store_true",
                   help="also emulate a second member of every rank class and fail if its trace differs")
    p.add_argument("--exact-dedup", action="store_true",
                   help="put ranks in one class only when their traces are the same (by default ranks that differ "
                        "only in the shapes of their computation, such as each data-parallel rank's optimizer "
                        "shard, share one when their FLOPs, bytes and peak memory agree within 0.5%%)")
    add_host_profile_option(p)
    p.add_argument("-m", "--module", action="store_true",
                   help="SCRIPT is a module, run as `python -m SCRIPT` (torchrun's -m), found from this directory")
    p.add_argument("script", help="the training script (with -m, its module: torchtitan.train)")
    p.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from maya.api import emulate
    from maya.emulator.runner import ScriptModule
    from maya.terminal_summary import terminal_summary
    from maya.world import ActorDiedError, DedupMismatchError

    try:
        summary = emulate(
            ScriptModule.here(args.script) if args.module else args.script,
            args.script_args,
            gpu=args.gpu,
            nnodes=args.nnodes,
            nproc_per_node=args.nproc_per_node,
            trace_dir=args.trace_dir,
            dedup=not args.no_dedup,
            verify_dedup=args.verify_dedup,
            exact_dedup=args.exact_dedup,
            progress=lambda line: print(line, file=sys.stderr, flush=True),
            host_profile=args.host_profile,
            with_host_speed_range=True,
        )
    except (FileNotFoundError, ValueError, NotImplementedError) as e:
        print(f"maya emulate: error: {e}", file=sys.stderr)
        return 2
    except (DedupMismatchError, ActorDiedError) as e:
        print(f"maya emulate: error: {e}", file=sys.stderr)
        return 1
    if args.samples_per_iteration is not None or args.tokens_per_iteration is not None:
        summary = replace(summary, samples_per_iteration=args.samples_per_iteration,
                          tokens_per_iteration=args.tokens_per_iteration)
    if args.json:
        summary.write_json(args.json)
    if summary.error:
        where = "" if summary.error.startswith("[rank") else f"[rank {summary.emulated_ranks[0]}] "
        print(f"{where}the training script failed:\n{summary.error}", file=sys.stderr)
    print(terminal_summary(summary))
    return summary.exit_code
