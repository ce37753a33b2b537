"""Do cuDNN RNN timings repeat within one process, across processes, or only within a lease?

The held-out RNN signatures timed in two sessions (benchmarks/gpu/heldout_ops_h200 and
heldout_ops_h200_repeat_2) differ by 13% median, some by -37% or +26%, while each timing's own
p10-p90 spread is a few percent. This probe times the given rows of a profile file with
`maya profile`'s method (`maya.estimator.profiler._profile_one`: warm-up, CUDA events, L2 flush,
median) several rounds in one process, and records the GPU's SM and memory clocks around each
round; run it in several processes of one lease to tell a per-process choice (cuDNN's algorithm)
from a per-lease one.

    python3 benchmarks/gpu/rnn_repeat_probe.py --profile benchmarks/gpu/heldout_ops_h200/rnn.parquet \
        --rows 57,69,117,6,68,37,35,36,34,128 --rounds 3 --out OUT/process1.json
    python3 benchmarks/gpu/rnn_repeat_probe.py --summarize benchmarks/gpu/rnn_repeat_h200   # no GPU needed

`--summarize DIR` prints, for every process file in DIR and every row, its rounds' median times (ms)
and their spread (max / min - 1), and the largest spread.

`--rows all` times every row of the file. A process file is rewritten after every row, so a
process stopped by a time limit keeps what it timed (`--median-out` takes the rows every file has). To score the models against the median
of several processes instead of one timing per signature (no GPU needed for this step):

    python3 benchmarks/gpu/rnn_repeat_probe.py --profile benchmarks/gpu/heldout_ops_h200/rnn.parquet \
        --rows all --rounds 1 --out OUT/process1.json        # one process each, on the GPU
    python benchmarks/gpu/rnn_repeat_probe.py --summarize OUT --profile benchmarks/gpu/heldout_ops_h200/rnn.parquet \
        --median-out DIR/rnn.parquet
    python benchmarks/estimator_accuracy.py --heldout DIR --repeat /nonexistent --autotuned /nonexistent

`--median-out` writes the profile's rows that every process file timed, each with `duration_us` the
median over all their rounds (the profile's own timing kept as `duration_us_single`).
`--from-runs` turns whole `maya profile` runs of the same signatures (e.g. `--random-only --seed 1
--families conv --sleep-before` on two leases) into process files of one round each, matched to the
profile's rows by signature (no GPU needed):
    python benchmarks/gpu/rnn_repeat_probe.py --profile benchmarks/gpu/heldout_ops_h200/conv.parquet \
        --from-runs RUN1/conv.parquet RUN2/conv.parquet --out DIR
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import time
from pathlib import Path


def process_results(directory: Path) -> dict[str, list[dict]]:
    """Each process file's result entries, by file stem, read once."""
    return {path.stem: json.loads(path.read_text())["results"] for path in sorted(directory.glob("process*.json"))}


def times_by_row(results: list[dict]) -> dict[int, list[float]]:
    """A process file's round times (us) per profile row."""
    by_row: dict[int, list[float]] = {}
    for r in results:
        if "row" in r:
            by_row.setdefault(r["row"], []).append(r["duration_us"])
    return by_row


def rows_in_every_file(per_file: list[dict[int, list[float]]]) -> list[int]:
    """The profile rows that every process file timed."""
    return sorted(set.intersection(*(set(f) for f in per_file))) if per_file else []


def summarize(directory: Path, profile: Path | None = None) -> None:
    """Print each process file's per-row round times and spread, then the largest spread, how the
    rows move between processes, and each process against the recorded timings."""
    processes = process_results(directory)
    largest = (0.0, "")
    for stem, results in processes.items():
        for row, times in times_by_row(results).items():
            spread = max(times) / min(times) - 1
            print(f"{stem} row {row:>3}: {', '.join(f'{t / 1e3:.1f}' for t in times)} ms, spread {spread:.1%}")
            largest = max(largest, (spread, f"{stem} row {row}"))
    print(f"largest spread {largest[0]:.1%} ({largest[1]})")
    between_processes([times_by_row(results) for results in processes.values()], profile)
    against_recorded(processes)


def against_recorded(processes: dict[str, list[dict]]) -> None:
    """Print each process file's times over the profile's recorded ones: median, range, and the rows
    more than 10% away."""
    import statistics

    for stem, results in processes.items():
        pairs = [(r["duration_us"], r["recorded_us"]) for r in results if "row" in r and r.get("recorded_us")]
        if pairs:
            ratios = [new / old for new, old in pairs]
            print(f"{stem} against the recorded timing, {len(pairs)} rows: median ratio {statistics.median(ratios):.3f}, "
                  f"range {min(ratios):.3f}-{max(ratios):.3f}, {sum(abs(r - 1) > 0.1 for r in ratios)} rows more than 10% away")


def between_processes(per_file: list[dict[int, list[float]]], profile: Path | None) -> None:
    """Print how much each row's time moves between the process files (their medians over rounds):
    median over rows of max / min - 1, and sum(max - min) / sum(min) weighted by time. With the
    profile the rows came from, also apart for rows under and over 10 us per time step (the median
    time over the sequence length, layers and directions): cuDNN's standard RNN algorithm launches
    kernels per step, so a step near the host's launch rate moves with the host."""
    import statistics

    rows = rows_in_every_file(per_file) if len(per_file) > 1 else []
    if not rows:
        return
    times = [[statistics.median(f[i]) for f in per_file] for i in rows]
    spreads = [max(t) / min(t) - 1 for t in times]
    weighted = sum(max(t) - min(t) for t in times) / sum(min(t) for t in times)
    print(f"between {len(per_file)} processes, {len(rows)} rows: median spread {statistics.median(spreads):.1%}, "
          f"time-weighted {weighted:.1%}, largest {max(spreads):.1%}")
    if profile is None:
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    from maya.estimator.features import extract_features
    from maya.hardware import load_gpu

    f = extract_features(pq.read_table(profile).take(pa.array(rows)), load_gpu("h200")).reset_index(drop=True)
    steps = (2 ** f["log2_seq"] * f["num_layers"] * (1 + f["bidirectional"])).to_numpy()
    per_step = [statistics.median(t) / n for t, n in zip(times, steps)]
    for label, keep in (("under 10 us per step", lambda u: u < 10), ("10 us per step or more", lambda u: u >= 10)):
        mine = [k for k, u in enumerate(per_step) if keep(u)]
        if mine:
            part = [times[k] for k in mine]
            print(f"  {label}: {len(mine)} rows, median spread {statistics.median(spreads[k] for k in mine):.1%}, "
                  f"time-weighted {sum(max(t) - min(t) for t in part) / sum(min(t) for t in part):.1%}")


def median_table(directory: Path, profile: Path, stems: list[str] | None = None):
    """`profile`'s rows timed in every process file of `directory` (or of those named by `stems`), as
    a pyarrow table whose `duration_us` is the median of all their rounds (the original in
    `duration_us_single`)."""
    import statistics

    import pyarrow as pa
    import pyarrow.parquet as pq

    processes = process_results(directory)
    if stems is not None:
        missing = sorted(set(stems) - set(processes))
        if missing:
            raise SystemExit(f"no {', '.join(m + '.json' for m in missing)} in {directory}")
        processes = {stem: processes[stem] for stem in stems}
    per_file = [times_by_row(results) for results in processes.values()]
    if not per_file:
        raise SystemExit(f"no process*.json in {directory}")
    rows = rows_in_every_file(per_file)
    if not rows:
        raise SystemExit(f"no row was timed by every process file of {directory}")
    table = pq.read_table(profile).take(pa.array(rows))
    medians = [statistics.median([t for f in per_file for t in f[i]]) for i in rows]
    table = table.append_column("duration_us_single", table.column("duration_us"))
    return table.set_column(table.schema.get_field_index("duration_us"), "duration_us", pa.array(medians))


def write_medians(directory: Path, profile: Path, out: Path) -> int:
    """Write `median_table(directory, profile)` to `out`; returns the number of rows written."""
    import pyarrow.parquet as pq

    table = median_table(directory, profile)
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, out)
    return table.num_rows


def clocks() -> str:
    """nvidia-smi's current SM and memory clocks, MHz (empty if it cannot be run)."""
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw",
                               "--format=csv,noheader"], capture_output=True, text=True, timeout=10, check=False).stdout.strip()
    except Exception:  # noqa: BLE001 - the clocks are context only
        return ""


def write_runs_as_processes(profile: Path, runs: list[Path], out_dir: Path) -> None:
    """Write `out_dir/process{k}.json` for the k-th of `runs` (profile files timing `profile`'s
    signatures again): one round, each of `profile`'s rows with the run's time of its signature.

    Raises:
        SystemExit: a run lacks one of the profile's signatures.
    """
    import pyarrow.parquet as pq

    from maya.estimator.signature import signature_keys

    table = pq.read_table(profile)
    keys, recorded = signature_keys(table).tolist(), table.column("duration_us").to_pylist()
    ops = table.column("op").to_pylist()
    out_dir.mkdir(parents=True, exist_ok=True)
    for k, run in enumerate(runs, start=1):
        timed = pq.read_table(run)
        by_key = dict(zip(signature_keys(timed).tolist(), timed.select(["duration_us", "duration_us_p10",
                                                                        "duration_us_p90", "reps"]).to_pylist()))
        missing = sum(key not in by_key for key in keys)
        if missing:
            raise SystemExit(f"{run} lacks {missing} of the {len(keys)} signatures of {profile}")
        env = {c: timed.column(c)[0].as_py() for c in ("gpu_name", "torch_version", "cuda_version", "cudnn_version", "date", "host")
               if c in timed.column_names}
        results = [{"round": 0, "row": i, "op": op, "recorded_us": old, "duration_us": by_key[key]["duration_us"],
                    "p10_us": by_key[key]["duration_us_p10"], "p90_us": by_key[key]["duration_us_p90"],
                    "reps": by_key[key]["reps"]} for i, (key, op, old) in enumerate(zip(keys, ops, recorded))]
        (out_dir / f"process{k}.json").write_text(json.dumps({"env": env, "source": str(run), "results": results}, indent=1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profile", help="a profile parquet file (e.g. the held-out rnn.parquet)")
    p.add_argument("--rows", help="comma-separated row indices of that file, or `all`")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--sleep-before", action="store_true",
                   help="time every row behind a GPU sleep (`profiler.sleep_cycles`), so that the host has launched "
                        "the op's kernels before the GPU reaches them: its GPU time without the host's launch rate "
                        "(the profiler does so for RNNs anyway; rnn_heldout_sleep_h200 was timed at c11e6bf, when "
                        "this flag sized the sleep from the row's recorded time)")
    p.add_argument("--out")
    p.add_argument("--summarize", type=Path, metavar="DIR", help="print the spreads of DIR's process*.json and exit")
    p.add_argument("--median-out", type=Path, metavar="FILE",
                   help="with --summarize and --profile: write the rows with their median over DIR's files")
    p.add_argument("--from-runs", nargs="+", type=Path, metavar="FILE",
                   help="with --profile and --out DIR: write each profile run's times of the profile's signatures "
                        "as DIR/process<k>.json")
    args = p.parse_args()
    if args.from_runs:
        if not (args.profile and args.out):
            p.error("--from-runs needs --profile (the rows to match) and --out (a directory)")
        write_runs_as_processes(Path(args.profile), args.from_runs, Path(args.out))
        return
    if args.summarize:
        summarize(args.summarize, Path(args.profile) if args.profile else None)
        if args.median_out:
            if not args.profile:
                p.error("--median-out needs --profile (the file the rows were timed from)")
            n = write_medians(args.summarize, Path(args.profile), args.median_out)
            print(f"wrote {n} rows with their median time to {args.median_out}")
        return
    if not (args.profile and args.rows and args.out):
        p.error("--profile, --rows and --out are needed to time rows")
    import pyarrow.parquet as pq
    import torch

    from maya.estimator import profiler
    from maya.estimator.profile_grid import ProfileCase

    table = pq.read_table(args.profile).to_pylist()
    device = torch.device("cuda")
    env = profiler._environment(device)
    timer = profiler._Timer(device)
    rows = list(range(len(table))) if args.rows == "all" else [int(i) for i in args.rows.split(",")]
    results = []
    for round_ in range(args.rounds):
        before = clocks()
        for i in rows:
            r = table[i]
            case = ProfileCase(family=r["family"], op=r["op"], input_shapes=tuple(tuple(s) for s in r["input_shapes"]),
                               input_dtypes=tuple(r["input_dtypes"]), input_strides=tuple(tuple(s) for s in r["input_strides"]),
                               attrs=json.loads(r["attrs"]), allow_tf32=bool(r["allow_tf32"]))
            if args.sleep_before:  # the profiler sizes the sleep from the op's untimed run (`sleep_cycles`)
                case = dataclasses.replace(case, sleep_before=True)
            row = profiler._profile_one(case, timer, env, quick=False, seed=i, from_trace=False)
            results.append({"round": round_, "row": i, "op": r["op"], "recorded_us": r["duration_us"],
                            "duration_us": row["duration_us"], "p10_us": row["duration_us_p10"],
                            "p90_us": row["duration_us_p90"], "reps": row["reps"]})
            Path(args.out).write_text(json.dumps({"env": env, "results": results}, indent=1))
        results.append({"round": round_, "clocks_before": before, "clocks_after": clocks(), "time": time.time()})
        Path(args.out).write_text(json.dumps({"env": env, "results": results}, indent=1))


if __name__ == "__main__":
    main()
