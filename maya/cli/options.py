"""Options that `maya emulate` and `maya simulate` share, defined once."""

from __future__ import annotations

import argparse


def add_throughput_options(p: argparse.ArgumentParser) -> None:
    """`--samples-per-iteration` and `--tokens-per-iteration`, for samples/s and tokens/s."""
    p.add_argument("--samples-per-iteration", type=int, metavar="N",
                   help="samples the whole job consumes per iteration (global batch size), for samples/s")
    p.add_argument("--tokens-per-iteration", type=int, metavar="N",
                   help="tokens the whole job consumes per iteration, for tokens/s")


def add_host_profile_option(p: argparse.ArgumentParser) -> None:
    """`--host-profile`: the host costs of the machine the job will run on, in place of the shipped ones."""
    p.add_argument("--host-profile", metavar="PATH",
                   help="host costs measured on the machine the job will run on (the output of `maya profile "
                   "--families host --out DIR`: DIR or DIR/host_overhead.json); its per-op figures replace the "
                   "shipped ones, whose CPU may be faster or slower than yours")
