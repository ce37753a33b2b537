"""Score Maya's predictions against the H200 ground truth of the validation suite.

Every workload of benchmarks/validation/suite.py runs under `maya.api.emulate` in its own
subprocess (a crash, hang or leak in one cannot affect the others). The predicted step time is the
median `time_ms` over the iterations of the timed steps (the first `--warmup` iterations are
dropped, as are any beyond `warmup + steps`), the predicted peak memory the largest
`peak_allocated_bytes` over those same iterations: the figures that measure_ground_truth.py
records on the GPU (median of the timed steps; peak after the reset that follows warm-up).

The measured step time a prediction is scored on is the median over every H200 lease that ran
measure_ground_truth.py on the workload (benchmarks/validation/ground_truth_h200.json, the first, and
benchmarks/gpu/host_phase_h200/lease_*): a step set by the host moves by tens of percent with the
lease's CPU, so one lease is one draw of it. The summary also scores the first lease alone.

    python benchmarks/validate.py [--only NAME ...] [--out benchmarks/validation/results_h200.md] [--jobs N]

Prints a markdown table and summary lines, and writes the same markdown (with a header naming the
ground truth's environment and the command) to --out: by default the committed table for the whole
suite, and nothing for a part of it (`--only`) unless --out is named. Predictions are deterministic,
so a rerun gives the same table.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
VALIDATION_DIR = REPO_ROOT / "benchmarks" / "validation"
GROUND_TRUTH = VALIDATION_DIR / "ground_truth_h200.json"
DEFAULT_OUT = VALIDATION_DIR / "results_h200.md"
DEFAULT_WARMUP = 4
DEFAULT_STEPS = 12
TIMEOUT_S = 600
GIB = 1024**3

REPEATABLE_SPREAD = 0.02
"""A workload's ground truth counts as repeatable when its step time on every lease measured is within
2% (GPU-bound workloads measured 0.0-1.5%; host-bound ones moved up to 71% with the lease's CPU)."""

sys.path.insert(0, str(VALIDATION_DIR))
sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
from ground_truth_repeatability import LEASE_SETS, lease_medians, lease_set, lease_spreads, lease_times, measurements  # noqa: E402
from suite import WORKLOADS, Workload  # noqa: E402

from maya.emulator.allocator_config import ENV_KEYS  # noqa: E402

# Runs in the child: emulate one script and write its summary as JSON.
CHILD_CODE = """
import json, sys
from maya.api import emulate
script, out, trace_dir, args, gpu, host = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), sys.argv[5], sys.argv[6]
summary = emulate(script, args, gpu=gpu, trace_dir=trace_dir, host_profile=host or None, with_host_speed_range=not host)
summary.write_json(out)
"""


# ---------------------------------------------------------------- pure functions


def flag_value(argv: list[str] | tuple[str, ...], flag: str, default: int) -> int:
    """The integer value of `flag` in argv (`--flag N` or `--flag=N`; the last one wins), else default."""
    value = default
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            value = int(argv[i + 1])
        elif arg.startswith(flag + "="):
            value = int(arg.split("=", 1)[1])
    return value


def timed_iterations(iterations: list[dict], warmup: int, steps: int | None = None) -> list[dict]:
    """The iterations of the timed steps: drop the first `warmup`, keep at most `steps` after them.

    Iterations are matched by their `index` field (iteration k is the script's step k), so a trailing
    partial iteration beyond warmup + steps is dropped too.
    """
    end = None if steps is None else warmup + steps
    return [it for it in iterations if it["index"] >= warmup and (end is None or it["index"] < end)]


def predicted_figures(iterations: list[dict], warmup: int,
                      steps: int | None = None) -> tuple[float | None, int | None, int | None]:
    """(median time_ms, max peak_allocated_bytes, max peak_reserved_bytes) over the timed iterations; None where
    there are none."""
    timed = timed_iterations(iterations, warmup, steps)
    times = [it["time_ms"] for it in timed if it.get("time_ms") is not None]
    ms = statistics.median(times) if times else None
    peak = max((it["peak_allocated_bytes"] for it in timed), default=None)
    reserved = max((it["peak_reserved_bytes"] for it in timed), default=None)
    return ms, peak, reserved


def signed_error(predicted: float | None, measured: float | None) -> float | None:
    """(predicted - measured) / measured, or None when either is missing or measured is zero."""
    if predicted is None or measured is None or measured == 0:
        return None
    return (predicted - measured) / measured


@dataclass
class Row:
    """One workload's comparison."""

    name: str
    held_out: bool
    measured_ms: float | None
    predicted_ms: float | None
    measured_bytes: int | None
    predicted_bytes: int | None
    status: str
    wall_s: float | None = None
    spread: float | None = None
    """max / min - 1 of this workload's measured step time over the H200 leases it was measured on."""
    leases: int = 1
    """How many leases measured_ms is the median of."""
    first_lease_ms: float | None = None
    """The step time measured on the first lease alone (ground_truth_h200.json), when measured_ms is a
    median over several."""
    lease_range_ms: tuple[float, float] | None = None
    """The fastest and slowest step time the leases measured."""
    lease_steps_ms: tuple[float, ...] = ()
    """Every lease's step time (the scored file's first)."""
    host_range_ms: tuple[float, float] | None = None
    """A host-bound prediction's step on a fast and on a slow host (the summary's `host_speed_range_ms`)."""
    measured_reserved: int | None = None
    """`torch.cuda.max_memory_reserved()` after warm-up: the caching allocator's segments, which decide OOM."""
    predicted_reserved: int | None = None

    @property
    def within_leases(self) -> bool | None:
        """Whether the predicted step time lies within the leases' measured range (None if unknown)."""
        if self.predicted_ms is None or self.lease_range_ms is None:
            return None
        return self.lease_range_ms[0] <= self.predicted_ms <= self.lease_range_ms[1]

    @property
    def time_error(self) -> float | None:
        return signed_error(self.predicted_ms, self.measured_ms)

    @property
    def first_lease_error(self) -> float | None:
        first = self.measured_ms if self.first_lease_ms is None else self.first_lease_ms
        return signed_error(self.predicted_ms, first)

    @property
    def memory_error(self) -> float | None:
        return signed_error(self.predicted_bytes, self.measured_bytes)

    @property
    def reserved_error(self) -> float | None:
        return signed_error(self.predicted_reserved, self.measured_reserved)


def _num(x: float | None, fmt: str) -> str:
    return "—" if x is None else format(x, fmt)


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:+.1f}%"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def format_table(rows: list[Row]) -> str:
    """The markdown table of all rows."""
    lines = [
        "| workload | held out | measured ms | leases | lease spread | predicted ms | time error % | measured GiB "
        "| predicted GiB | memory error % | measured reserved GiB | predicted reserved GiB | reserved error % | status |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            "| "
            + " | ".join(
                [
                    r.name,
                    "yes" if r.held_out else "no",
                    _num(r.measured_ms, ".2f"),
                    str(r.leases if r.measured_ms is not None else 0),
                    "—" if r.spread is None else f"{100 * r.spread:.1f}%",
                    _num(r.predicted_ms, ".2f"),
                    _pct(r.time_error),
                    _num(None if r.measured_bytes is None else r.measured_bytes / GIB, ".2f"),
                    _num(None if r.predicted_bytes is None else r.predicted_bytes / GIB, ".2f"),
                    _pct(r.memory_error),
                    _num(None if r.measured_reserved is None else r.measured_reserved / GIB, ".2f"),
                    _num(None if r.predicted_reserved is None else r.predicted_reserved / GIB, ".2f"),
                    _pct(r.reserved_error),
                    _cell(r.status),
                ]
            )
            + " |"
        )
    return "\n".join(lines)


def error_stats(errors: list[float | None]) -> tuple[float | None, float | None, int]:
    """(median |error|, worst |error|, count) over the errors that exist."""
    abs_errors = [abs(e) for e in errors if e is not None]
    if not abs_errors:
        return None, None, 0
    return statistics.median(abs_errors), max(abs_errors), len(abs_errors)


def summary_lines(rows: list[Row]) -> list[str]:
    """Median and worst |error| of time and memory for the calibration, held-out and whole sets."""
    lines = []
    groups = [
        ("calibration", [r for r in rows if not r.held_out]),
        ("held-out", [r for r in rows if r.held_out]),
        ("all", rows),
    ]
    repeatable = [r for r in rows if r.spread is not None and r.spread <= REPEATABLE_SPREAD]
    if repeatable:
        groups.append((f"repeatable ground truth (lease spread <= {100 * REPEATABLE_SPREAD:.0f}%)", repeatable))
    for label, group in groups:
        for what in ("time", "memory", "reserved"):
            lines.append(_summary_line(f"{label} {what}", group, lambda r, what=what: getattr(r, f"{what}_error")))
    if any(r.leases > 1 for r in rows):
        for label, group in groups[:3]:
            lines.append(_summary_line(f"{label} time against the first lease alone", group, lambda r: r.first_lease_error))
        known = [r for r in rows if r.within_leases is not None and r.leases > 1]
        inside = [r.name for r in known if r.within_leases]
        lines.append(f"- predicted step time within the range the leases measured: {len(inside)} of {len(known)} "
                     "workloads measured on more than one lease")
        for label, group in groups[:2]:
            if line := _host_range_line(label, group):
                lines.append(line)
    return lines


def _host_range_line(label: str, group: list[Row]) -> str | None:
    """How many lease step times of the group's host-bound predictions (those with a fast-to-slow host
    range) fall inside that range; None when none has both a range and several leases."""
    ranged = [r for r in group if r.host_range_ms is not None and len(r.lease_steps_ms) > 1]
    if not ranged:
        return None
    inside = sum(r.host_range_ms[0] <= t <= r.host_range_ms[1] for r in ranged for t in r.lease_steps_ms)
    total = sum(len(r.lease_steps_ms) for r in ranged)
    return (f"- {label} lease step times within the predicted fast-to-slow host range (the 10th to 90th "
            f"percentile host): {inside} of {total} ({inside / total:.0%}), over the {len(ranged)} host-bound "
            "predictions measured on more than one lease")


def _summary_line(label: str, group: list[Row], error) -> str:
    """`- label: median |error| .., worst |error| .. (workload) over n of N workloads` for error(row)."""
    med, worst, n = error_stats([error(r) for r in group])
    worst_name = ""
    if worst is not None:
        worst_row = max((r for r in group if error(r) is not None), key=lambda r: abs(error(r)))
        worst_name = f" ({worst_row.name})"
    med_s = "—" if med is None else f"{100 * med:.1f}%"
    worst_s = "—" if worst is None else f"{100 * worst:.1f}%"
    return f"- {label}: median |error| {med_s}, worst |error| {worst_s}{worst_name} over {n} of {len(group)} workloads"


def join_leases(rows: list[Row], gpu: str) -> None:
    """Score each measured row on the median step time over `gpu`'s leases (`LEASE_SETS`: its scored
    ground truth and its other leases' files), keeping the scored file's figure as `first_lease_ms`,
    with the leases' spread and range."""
    measured = measurements(gpu)  # every lease's file, read once
    times, spreads, medians = lease_times(measured), lease_spreads(measured), lease_medians(measured)
    for r in rows:
        r.spread = spreads.get(r.name)
        if r.measured_ms is not None and r.name in medians:
            r.first_lease_ms = r.measured_ms
            r.measured_ms, r.leases = medians[r.name]
            r.lease_range_ms = (min(times[r.name]), max(times[r.name]))
            r.lease_steps_ms = tuple(times[r.name])


def first_line(text: str | None) -> str:
    """The line that says what went wrong: a traceback's last line (the exception), else the only line."""
    for line in (text or "").strip().splitlines()[::-1]:
        if line.strip():
            return line.strip()[:200]
    return "unknown error"


# ---------------------------------------------------------------- running


def emulate_workload(workload: Workload, timeout_s: float = TIMEOUT_S, gpu: str = "h200",
                     host_profile: Path | None = None, alloc_conf: str | None = None) -> dict:
    """Run one workload under Maya in a subprocess, predicted for catalog GPU `gpu` (with the host
    figures of `host_profile`, a `maya profile --families host` output, if given, and PYTORCH_CUDA_ALLOC_CONF
    set to `alloc_conf`, if given); its summary dict, or {"error": ...}."""
    with tempfile.TemporaryDirectory(prefix=f"maya-validate-{workload.name}-") as tmp:
        out = Path(tmp) / "summary.json"
        trace_dir = Path(tmp) / "trace"
        cmd = [
            sys.executable, "-c", CHILD_CODE,
            str(workload.script_path), str(out), str(trace_dir), json.dumps(list(workload.argv)), gpu,
            str(host_profile or ""),
        ]
        start = time.monotonic()
        try:
            env = {k: v for k, v in os.environ.items() if k not in ENV_KEYS}
            if alloc_conf:
                env["PYTORCH_CUDA_ALLOC_CONF"] = alloc_conf
            proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout_s, env=env)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout_s:.0f} s", "wall_s": time.monotonic() - start}
        wall = time.monotonic() - start
        if proc.returncode != 0 or not out.exists():
            return {"error": first_line(proc.stderr) or f"exit code {proc.returncode}", "wall_s": wall}
        summary = json.loads(out.read_text())
        summary["wall_s"] = wall
        return summary


def compare(workload: Workload, summary: dict, truth: dict | None) -> Row:
    """One row from the emulation summary and the ground-truth entry."""
    warmup = flag_value(workload.argv, "--warmup", DEFAULT_WARMUP)
    steps = flag_value(workload.argv, "--steps", DEFAULT_STEPS)
    measured_ok = truth is not None and truth.get("ok")
    row = Row(
        name=workload.name,
        held_out=workload.held_out,
        measured_ms=truth.get("median_step_ms") if measured_ok else None,
        predicted_ms=None,
        measured_bytes=truth.get("max_memory_allocated") if measured_ok else None,
        predicted_bytes=None,
        measured_reserved=truth.get("max_memory_reserved") if measured_ok else None,
        status="ok",
        wall_s=summary.get("wall_s"),
    )
    if "iterations" not in summary:
        row.status = "FAILED: " + str(summary.get("error"))
        return row
    if summary.get("exit_code", 0) != 0 or summary.get("oom"):
        row.status = ("OOM: " if summary.get("oom") else "FAILED: ") + first_line(summary.get("error"))
        return row
    row.predicted_ms, row.predicted_bytes, row.predicted_reserved = predicted_figures(summary["iterations"], warmup, steps)
    if summary.get("host_speed_range_ms"):
        row.host_range_ms = tuple(summary["host_speed_range_ms"])
    if row.predicted_ms is None:
        row.status = f"FAILED: no timed iterations ({len(summary['iterations'])} iterations, warmup {warmup})"
    elif not measured_ok:
        row.status = "no ground truth"
    return row


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def header(env: dict, command: str, ground_truth: Path = GROUND_TRUTH, gpu: str = "h200",
           host_profile: Path | None = None, alloc_conf: str | None = None) -> str:
    leases = lease_set(ground_truth)
    gpu_name = env.get("gpu_name") or gpu
    return "\n".join(
        [
            f"# Maya validation: predictions vs. {gpu_name} ground truth",
            "",
            f"- Ground truth: `{_shown(ground_truth)}`, measured {env.get('date_utc')} "
            f"on {env.get('gpu_count')}x {env.get('gpu_name')}, torch {env.get('torch_version')} "
            f"(CUDA {env.get('torch_cuda_version')}, cuDNN {env.get('cudnn_version')}), "
            f"driver {env.get('driver_version')}, transformers {env.get('transformers_version')}.",
            "- Predicted step time: median `time_ms` over the timed iterations (the first `--warmup` "
            "iterations dropped); predicted memory: max `peak_allocated_bytes` over the same iterations.",
            "- Error = (predicted - measured) / measured. Held-out workloads were never looked at for calibration.",
            f"- Measured ms: the median step time over the `leases` {leases.upper()} leases that measured the workload "
            f"(this ground truth and `{_shown(LEASE_SETS[leases][1])}/lease_*`, each by measure_ground_truth.py; "
            f"`python benchmarks/ground_truth_repeatability.py{'' if leases == 'h200' else ' --gpu ' + leases}` lists "
            "them); measured memory: this ground truth's. "
            "Lease spread: max / min - 1 of those step times. Host-bound steps move with the lease's CPU, so one "
            "lease is one draw; the last lines score this ground truth's lease alone." if leases else
            "- Measured ms: this ground truth's median step time, one lease (host-bound steps move with the lease's "
            "CPU by tens of percent: see the H200 table's lease spreads).",
            *([] if gpu == "h200" else [
                f"- Predicted with `gpu=\"{gpu}\"`: Maya's models are fitted on H200 profiles only, so each op's time is "
                "the H200 model's, scaled by the catalog's compute and bandwidth ratios (lower-confidence)."]),
            *([] if host_profile is None else [
                f"- Host costs: `{_shown(host_profile)}` (`maya profile --families host` on the ground truth's "
                "machine) in place of the shipped H200 figures."]),
            *([] if not alloc_conf else [
                f"- Allocator: `PYTORCH_CUDA_ALLOC_CONF={alloc_conf}` for the predictions (the ground truth's "
                f"`alloc_conf`: {env.get('alloc_conf')!r})."]),
            f"- Predicted with torch {_version('torch')} and transformers {_version('transformers')} "
            "(the Hugging Face models must be the ground truth's version: `pip install -e .[test]` pins it).",
            f"- Reproduce: `{command}`",
            "",
        ]
    )


def _shown(path: Path) -> str:
    """`path` relative to the repository when it is inside it."""
    path = Path(path).resolve()
    return str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", nargs="+", metavar="NAME", help="run only these workloads")
    p.add_argument("--out", type=Path, default=None,
                   help=f"markdown file to write (default: {DEFAULT_OUT.relative_to(REPO_ROOT)} for the whole suite; "
                        "with --only, none unless named: a part must not replace the committed table)")
    p.add_argument("--jobs", type=int, default=2, help="workloads emulated in parallel")
    p.add_argument("--timeout", type=float, default=TIMEOUT_S, help="seconds per workload")
    p.add_argument("--gpu", default="h200", help="catalog GPU to predict for (default h200)")
    p.add_argument("--ground-truth", type=Path, default=GROUND_TRUTH,
                   help="measure_ground_truth.py output to score on (default: the H200 one, with its other leases); "
                        "any other file is scored as one lease")
    p.add_argument("--host-profile", type=Path, default=None,
                   help="`maya profile --families host` output of the ground truth's machine, in place of the shipped "
                        "host figures")
    p.add_argument("--alloc-conf", default=None,
                   help="PYTORCH_CUDA_ALLOC_CONF for the emulations (e.g. expandable_segments:True; default: none, "
                        "whatever this shell has set is dropped)")
    args = p.parse_args(argv)
    if not args.ground_truth.is_file():
        p.error(f"no ground truth file {args.ground_truth}")
    leases_of = lease_set(args.ground_truth)  # a GPU's scored ground truth: scored on every lease's median
    if args.ground_truth.resolve() != GROUND_TRUTH.resolve() and args.out is None and not args.only:
        p.error("name --out: the default table is the H200 ground truth's")

    gt = json.loads(args.ground_truth.read_text())
    truth = {w["name"]: w for w in gt["workloads"]}
    workloads = list(WORKLOADS)
    if args.only:
        unknown = set(args.only) - {w.name for w in workloads}
        if unknown:
            p.error(f"unknown workloads: {', '.join(sorted(unknown))}")
        workloads = [w for w in workloads if w.name in args.only]

    summaries: dict[str, dict] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(emulate_workload, w, args.timeout, args.gpu, args.host_profile, args.alloc_conf): w for w in workloads}
        for fut in concurrent.futures.as_completed(futures):
            w = futures[fut]
            try:
                summaries[w.name] = fut.result()
            except Exception as exc:  # noqa: BLE001 - one workload's failure must not stop the others
                summaries[w.name] = {"error": f"{type(exc).__name__}: {exc}"}
            s = summaries[w.name]
            state = "ok" if "iterations" in s and not s.get("error") else f"failed: {first_line(s.get('error'))}"
            print(f"[{len(summaries)}/{len(workloads)}] {w.name}: {s.get('wall_s', 0):.0f} s, {state}",
                  file=sys.stderr, flush=True)

    rows = [compare(w, summaries[w.name], truth.get(w.name)) for w in workloads]
    if leases_of:
        join_leases(rows, leases_of)
    body = format_table(rows) + "\n\n" + "\n".join(summary_lines(rows)) + "\n"
    print(body)

    command = "python benchmarks/validate.py" + "".join(
        f" {a}" for a in ([] if argv is None and len(sys.argv) == 1 else [shlex.quote(x) for x in (argv or sys.argv[1:])])
    )
    walls = ", ".join(f"{r.name} {r.wall_s:.0f} s" for r in sorted(rows, key=lambda r: -(r.wall_s or 0))[:5] if r.wall_s)
    print(f"slowest emulations (wall time, not written to --out so that reruns match): {walls}", file=sys.stderr)
    out = args.out if args.out is not None else (None if args.only else DEFAULT_OUT)
    if out is None:
        print(f"not written: --only runs part of the suite (name --out to write it; {DEFAULT_OUT.relative_to(REPO_ROOT)} "
              "holds the whole suite's table)", file=sys.stderr)
        return 0
    text = header(gt.get("environment", {}), command, args.ground_truth, args.gpu, args.host_profile,
                  args.alloc_conf) + "\n" + body
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
