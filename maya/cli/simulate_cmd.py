"""`maya simulate`: re-time a stored trace on another cluster, GPU type or network without emulating again."""

from __future__ import annotations

import argparse
import sys

from maya.cli.options import add_host_profile_option, add_throughput_options
from maya.hardware import available_gpus
from maya.hardware.cluster import available_clusters


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "simulate",
        help="re-simulate the trace of a `maya emulate` run on a cluster (no re-emulation)",
        description="Estimate and simulate the traces in TRACE_DIR (written by `maya emulate --trace-dir`) on a "
        "cluster, and print the same summary. Example: maya simulate trace --cluster dgx-h100 --json s.json",
    )
    p.add_argument("trace_dir", metavar="TRACE_DIR", help="a complete trace directory (it has meta.json)")
    p.add_argument("--cluster", metavar="PRESET_OR_YAML",
                   help=f"a preset ({', '.join(available_clusters())}; scaled to the job's nodes) or a cluster "
                   "YAML file (used as written); default: the DGX preset of --gpu")
    p.add_argument("--gpu", choices=available_gpus(),
                   help="GPU to predict for when --cluster is not given; default: the emulated GPU")
    p.add_argument("--json", metavar="PATH", help="write the summary JSON here")
    p.add_argument("--timeline", metavar="PATH",
                   help="write the Perfetto timeline here (default: TRACE_DIR/timeline-<cluster>.json)")
    add_throughput_options(p)
    p.add_argument("--exact", metavar="PATH",
                   help="op times measured for this trace on a real GPU of the target type (the output of "
                   "`maya profile --trace TRACE_DIR --out DIR`: DIR or DIR/exact.parquet); used before the models")
    add_host_profile_option(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from maya.resimulate import simulate_trace_dir
    from maya.simulator import SimulationDeadlockError
    from maya.terminal_summary import terminal_summary

    try:
        summary = simulate_trace_dir(
            args.trace_dir,
            cluster=args.cluster,
            gpu=args.gpu,
            timeline_path=args.timeline,
            samples_per_iteration=args.samples_per_iteration,
            tokens_per_iteration=args.tokens_per_iteration,
            exact=args.exact,
            host_profile=args.host_profile,
            with_host_speed_range=True,
        )
    except (FileNotFoundError, ValueError, SimulationDeadlockError) as e:
        print(f"maya simulate: error: {e}", file=sys.stderr)
        return 2
    if args.json:
        summary.write_json(args.json)
    print(terminal_summary(summary))
    return 0
