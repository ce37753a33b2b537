"""`maya tune`: search training configurations declared in a config file (see maya/tune/config_file.py).

    maya tune examples/tune_gpt.py                                        # local Ray, started if none runs
    ray job submit --working-dir . -- maya tune examples/tune_llama.py    # on a running Ray cluster
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from dataclasses import replace
from pathlib import Path

_GIB = 1 << 30
DEFAULT_OUT = Path("maya_out")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tune",
        help="search training configurations for the cheapest (or fastest) one that fits",
        description="Run the study declared in CONFIG (a Python file: script, search_space, global_batch, "
        "train_steps or train_tokens, clusters, ...) on Ray Tune, emulating each configuration on CPUs. "
        "Writes results.parquet/.csv, top_k.csv, pareto.csv, best.json, best_timeline.json and "
        "cost_vs_time.png to --out.",
    )
    p.add_argument("config", help="the study's config file (Python)")
    p.add_argument("--out", metavar="DIR", help="output directory; default maya_out/tune-<config name>")
    p.add_argument("--resume", action="store_true", help="continue the interrupted study in --out (with the search settings it started with)")
    p.add_argument("--address", help="Ray cluster address; default: RAY_ADDRESS, the running cluster, or a new local one")
    p.add_argument("--search", choices=["hyperopt", "random", "grid"], help="override the config's search algorithm")
    p.add_argument("--num-samples", type=int, help="override the config's trial count (hyperopt, random)")
    p.add_argument("--cache-dir", metavar="DIR", help="trace cache directory; default OUT/trace_cache")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from maya.tune import ConfigError, StudyFieldError, load_study, run_study

    try:
        study = load_study(args.config)
        overrides = {k: v for k, v in (("search", args.search), ("num_samples", args.num_samples)) if v is not None}
        if overrides:
            study = replace(study, **overrides)
    except ConfigError as e:
        print(f"maya tune: error: {e}", file=sys.stderr)
        return 2
    except StudyFieldError as e:
        print(f"maya tune: error: {args.config}: field '{e.field}': {e.reason}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else DEFAULT_OUT / f"tune-{Path(args.config).stem}"
    try:
        # stdout carries only the final report; Ray Tune's own banners join the progress on stderr.
        with contextlib.redirect_stdout(sys.stderr):
            results = run_study(study, out, resume=args.resume, address=args.address, progress=print_progress,
                                trace_cache_dir=args.cache_dir)
    except StudyFieldError as e:
        print(f"maya tune: error: {args.config}: field '{e.field}': {e.reason}", file=sys.stderr)
        return 2
    except FileExistsError as e:
        print(f"maya tune: error: {e} (--resume continues it, --out DIR starts another)", file=sys.stderr)
        return 2
    except (FileNotFoundError, ImportError) as e:
        print(f"maya tune: error: {e}", file=sys.stderr)
        return 2
    print(report(results, study.top_k, out, args.config))
    return 0 if results.best is not None else 1


def print_progress(line: str) -> None:
    """Progress sink of the CLI (module level, so that Ray Tune can pickle it with the study)."""
    print(line, file=sys.stderr, flush=True)


def report(results, top_k: int, out: Path, config: str | None) -> str:
    """The text printed when a study ends (and by `maya report OUT`): counts, cache use, the `top_k`
    configurations, the best one's breakdown, files; `config` names the study file in the hint that
    resumes an interrupted study (None: a placeholder)."""
    counts = results.counts
    lines = [f"maya tune: {sum(counts.values())} trials: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))]
    rate = results.cache_hit_rate
    if rate is not None:
        lines.append(f"  trace cache: {rate:.0%} of evaluated configurations were not emulated again")
    repeats = results.searcher.get("repeats_answered")
    if repeats:
        lines.append(f"  search: {repeats} repeated proposals answered from earlier trials without a trial"
                     + ("; every configuration of the space was tried" if results.searcher.get("space_exhausted") else ""))
    if results.unfinished_trials:
        lines.append(f"  interrupted with {results.unfinished_trials} trials to go: "
                     f"`maya tune {config or 'CONFIG'} --out {out} --resume` continues it")
    top = results.top(top_k)
    if top.empty:
        lines.append("  no configuration fits; see the reasons in results.csv")
    else:
        lines.append(f"  top {len(top)} by {results.objective}:")
        for rank, (_, row) in enumerate(top.iterrows(), start=1):
            config_text = " ".join(f"{d}={row[d]}" for d in results.dimensions if d in row)
            lines.append(
                f"  {rank:>3}. ${row['cost_usd']:,.2f}  {row['time_to_train_s'] / 3600:.2f} h  "
                f"{row['step_time_ms']:.1f} ms/step  {row['peak_reserved_bytes'] / _GIB:.1f} GiB  "
                f"{config_text} dp={int(row['dp'])} accum={int(row['accum'])}"
            )
        best = results.best
        breakdown = ", ".join(f"{k} {v:.1f}" for k, v in best.get("breakdown_ms", {}).items())
        if breakdown:
            lines.append(f"  best configuration's emulated run (ms): {breakdown}")
        lines.append(f"  best: {best['argv']}")
    for name, path in results.files.items():
        lines.append(f"  {name}: {path}")
    return "\n".join(lines)
