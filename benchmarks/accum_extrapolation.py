"""Micro-batch extrapolation error: extrapolated step time and peak memory against a full emulation.

For each case (a world of examples/train_gpt.py with a pipeline schedule, or gradient accumulation
without a pipeline), emulates the two small micro-batch counts the tuner would
(maya.tune.accum_extrapolation) and the configuration's own count, and reports the relative error of
the extrapolated step time and peak allocated / reserved memory. Every emulation runs on a local Ray.

    python benchmarks/accum_extrapolation.py --json benchmarks/results/accum_extrapolation.json
    python benchmarks/accum_extrapolation.py --accum 32 --case pp4-1f1b
"""

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "train_gpt.py"
# A laptop-scale GPT (8 layers of width 256, 512-token sequences) in bf16, one optimizer step.
MODEL = ["--steps", "1", "--seq", "512", "--dim", "256", "--layers", "8", "--heads", "4", "--vocab", "8192",
         "--batch", "2", "--precision", "bf16"]
CASES = {
    "accum-ddp2": (2, ["--dp", "ddp"]),
    "accum-fsdp2": (2, ["--dp", "fsdp"]),
    "pp2-gpipe": (2, ["--pp", "2", "--pp-schedule", "gpipe"]),
    "pp2-1f1b": (2, ["--pp", "2", "--pp-schedule", "1f1b"]),
    "pp2-interleaved": (2, ["--pp", "2", "--pp-schedule", "interleaved"]),
    "pp4-1f1b-fsdp": (8, ["--pp", "4", "--pp-schedule", "1f1b", "--dp", "fsdp"]),
}


def figures(world_size: int, argv: list[str], gpu: str) -> dict:
    """The figures of one emulation of examples/train_gpt.py `argv`, as the tuner caches them (with its wall time)."""
    from maya.api import emulate
    from maya.tune.evaluate import figures_from_summary

    trace_dir = Path(tempfile.mkdtemp(prefix="maya-extrapolation-"))
    started = time.perf_counter()
    summary = emulate(str(SCRIPT), argv, gpu=gpu, nproc_per_node=world_size, trace_dir=trace_dir)
    if summary.exit_code != 0:
        raise RuntimeError(f"{argv}: {summary.error}")
    return {**figures_from_summary(summary, trace_dir), "emulate_s": round(time.perf_counter() - started, 1)}


KEYS = ("step_time_ms", "peak_allocated_bytes", "peak_reserved_bytes")


def with_errors(row: dict, full: dict, derived: dict) -> dict:
    """`row` plus, for each figure, the emulated and extrapolated values and the relative error."""
    for key in KEYS:
        row[key] = {"emulated": full[key], "extrapolated": derived[key], "error": round((derived[key] - full[key]) / full[key], 4)}
    print(json.dumps(row), flush=True)
    return row


def write_result(command: str, rows: list[dict], json_path: str | None, **fields) -> None:
    """Print the largest errors and write every case with the command that made them."""
    result = {"command": command, **fields, "cases": rows,
              "max_abs_error": {k: max(abs(r[k]["error"]) for r in rows) for k in KEYS},
              "machine": f"{platform.machine()}, {os.cpu_count()} CPUs"}
    print(json.dumps(result["max_abs_error"]))
    if json_path:
        Path(json_path).write_text(json.dumps(result, indent=1) + "\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--accum", type=int, default=24, help="the micro-batch count to predict (multiple of every pp)")
    p.add_argument("--case", action="append", choices=sorted(CASES), help="cases to run (default: all)")
    p.add_argument("--gpu", default="h100")
    p.add_argument("--json", metavar="PATH", help="write the errors here")
    args = p.parse_args()

    import ray

    from maya.tune.accum_extrapolation import extrapolate_figures, extrapolation_counts

    ray.init(include_dashboard=False, log_to_driver=False)
    rows = []
    for name in args.case or sorted(CASES):
        world_size, extra = CASES[name]
        argv = [*MODEL, *extra]
        pp = int(extra[extra.index("--pp") + 1]) if "--pp" in extra else 1
        schedule = extra[extra.index("--pp-schedule") + 1] if "--pp-schedule" in extra else None
        counts = extrapolation_counts(args.accum, pp, schedule)
        if counts is None:
            raise SystemExit(f"{name}: accum={args.accum} is emulated as it is (not above a1 + a2)")
        small = {a: figures(world_size, [*argv, "--accum", str(a)], args.gpu) for a in counts}
        full = figures(world_size, [*argv, "--accum", str(args.accum)], args.gpu)
        derived = extrapolate_figures(small, args.accum)
        rows.append(with_errors({
            "case": name, "world_size": world_size, "argv": " ".join(extra), "accum": args.accum, "counts": list(counts),
            "emulate_s": {str(a): f["emulate_s"] for a, f in {**small, args.accum: full}.items()}}, full, derived))
    command = "python benchmarks/accum_extrapolation.py " + " ".join(
        [f"--accum {args.accum}", *(f"--case {c}" for c in args.case or [])])
    write_result(command, rows, args.json, model=" ".join(MODEL), gpu=args.gpu)


if __name__ == "__main__":
    main()
