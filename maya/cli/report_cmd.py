"""`maya report`: print again what a finished run printed, from the files it wrote.

    maya report summary.json        # a `maya emulate --json` or `maya simulate --json` summary: its one-page text
    maya report maya_out/tune-gpt   # a `maya tune --out` directory: the study's ranking and files
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="print the page of a finished emulation or study again, from its files",
        description="Print the one-page summary of a `maya emulate --json` / `maya simulate --json` file, or the "
        "ranking of a `maya tune --out` directory, without running anything again.",
    )
    p.add_argument("path", help="a summary JSON file, or the output directory of `maya tune`")
    p.add_argument("--top", type=int, metavar="N", help="a study: list its N best configurations (default: the study's top_k)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    path = Path(args.path)
    if args.top is not None and args.top < 1:
        return _error(f"--top must be at least 1, not {args.top}")
    try:
        text = _study_report(path, args.top) if path.is_dir() else _summary_report(path)
    except (FileNotFoundError, ValueError) as e:
        return _error(str(e))
    print(text)
    return 0


def _summary_report(path: Path) -> str:
    from maya.summary import EmulationSummary
    from maya.terminal_summary import terminal_summary

    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file or directory")
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path} is not JSON ({e}); give a `maya emulate --json` file or a `maya tune --out` directory") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path} holds a JSON {type(data).__name__}, not a `maya emulate --json` summary")
    try:
        summary = EmulationSummary.from_dict(data)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    return terminal_summary(summary)


def _study_report(path: Path, top: int | None) -> str:
    from maya.cli.tune_cmd import report
    from maya.tune.report import read_report

    if (path / "meta.json").is_file():
        raise ValueError(f"{path} is a trace directory: `maya simulate {path}` estimates and simulates it")
    results, top_k = read_report(path)
    return report(results, top if top is not None else top_k, path.resolve(), None)


def _error(message: str) -> int:
    print(f"maya report: error: {message}", file=sys.stderr)
    return 2
