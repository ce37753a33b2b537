"""`maya` command line: thin wrappers over the library, one subcommand each.

    maya emulate --gpu h200 --json summary.json --trace-dir trace train.py --batch 8
    maya simulate trace --cluster dgx-h100
    maya report summary.json
"""

from __future__ import annotations

import argparse
import logging
import sys

from maya.cli import emulate_cmd, profile_cmd, report_cmd, simulate_cmd, tune_cmd


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="maya",
        description="Predict how a PyTorch training job runs on a GPU cluster, using only CPUs.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress and details")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    emulate_cmd.add_parser(sub)
    simulate_cmd.add_parser(sub)
    profile_cmd.add_parsers(sub)
    tune_cmd.add_parser(sub)
    report_cmd.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `maya` console script; returns the process exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
