"""`maya profile` and `maya fit`: build the kernel-profile dataset on a GPU, and train models on it."""

from __future__ import annotations

import argparse
import json
import sys


def add_parsers(sub: argparse._SubParsersAction) -> None:
    from maya.estimator.profiler import build_parser

    p = sub.add_parser(
        "profile",
        parents=[build_parser()],
        add_help=False,
        help="time op signatures on a real GPU and write the Parquet profile dataset",
        description="Run on a machine with an NVIDIA GPU: time aten op signatures (shape grids, or the "
        "kernels of a trace with --trace) and write Parquet. Example: maya profile --out profiles/h200",
    )
    p.set_defaults(run=_run_profile)

    f = sub.add_parser(
        "fit",
        help="train the per-family CatBoost models on a profile dataset",
        description="Train one CatBoost model per op family; report held-out accuracy. "
        "Example: maya fit --profiles maya/estimator/data/h200 --out maya/estimator/data/h200/models --no-exact-table",
    )
    f.add_argument("--profiles", required=True, help="directory of <family>.parquet profiles")
    f.add_argument("--out", required=True, help="directory for the models and fit_report.json")
    f.add_argument("--gpu", default=None, help="catalog GPU of the profiles (default: read from the profiles)")
    f.add_argument("--seed", type=int, default=0, help="seed of the held-out split and CatBoost; default 0")
    f.add_argument("--no-exact-table", action="store_true",
                   help="do not write the profile rows as an exact lookup table (exact_durations.parquet): estimates "
                        "then come from the models, and from a `maya profile --trace` table where one is given "
                        "(how the shipped H200 models are fitted)")
    f.add_argument("--families", default=None, metavar="FAMILY[,FAMILY]",
                   help="refit only these families (e.g. rnn after new RNN profiles) and keep the other models and their "
                        "fit_report.json entries in --out; needs --no-exact-table")
    f.set_defaults(run=_run_fit)


def _run_profile(args: argparse.Namespace) -> int:
    from maya.estimator.profiler import NoGpuError, run_from_args

    try:
        print(run_from_args(args))
    except (NoGpuError, FileNotFoundError, ValueError) as e:
        print(f"maya profile: error: {e}", file=sys.stderr)
        return 2
    return 0


def _run_fit(args: argparse.Namespace) -> int:
    from maya.estimator.fit import fit_models

    families = [name.strip() for name in args.families.split(",") if name.strip()] if args.families else None
    try:
        report = fit_models(args.profiles, args.out, seed=args.seed, gpu=args.gpu,
                            exact_table=not args.no_exact_table, families=families)
    except (FileNotFoundError, ValueError) as e:
        print(f"maya fit: error: {e}", file=sys.stderr)
        return 2
    rows = {name: {"held-out time-weighted error": round(f.time_weighted_error, 4), "median APE": round(f.median_ape, 4)}
            for name, f in report.families.items()}
    print(json.dumps(rows, indent=2))
    return 0
