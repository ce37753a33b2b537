"""Tuning throughput: configurations evaluated per minute, and the trace cache's hit rate.

Runs a study (by default examples/tune_llama.py, the Llama-70B-class space on up to 1,024 H100s)
for a fixed time on a local Ray with every CPU of this machine, then prints what it measured:
trials finished, trials per minute, how many were pruned / emulated / served from the trace cache,
and the wall time of an emulation. The target (issue 7) is 1,000 configurations of the Llama study
within 30 minutes on the 2-core machine.

    python benchmarks/tune_throughput.py                                   # 30 minutes, 1,000 trials
    python benchmarks/tune_throughput.py --num-samples 3000                # as many trials as 30 minutes allow
    python benchmarks/tune_throughput.py --minutes 5 --json benchmarks/results/tune_throughput.json
    python benchmarks/tune_throughput.py --config examples/tune_gpt.py --minutes 10
    python benchmarks/tune_throughput.py --trials benchmarks/results/tune_throughput_llama_depth34_trials.csv.gz
"""

import argparse
import json
import os
import platform
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default=str(ROOT / "examples" / "tune_llama.py"), help="study config file")
    p.add_argument("--minutes", type=float, default=30.0, help="time budget of the study, minutes")
    p.add_argument("--num-samples", type=int, default=1000, help="trials to ask for (hyperopt, random)")
    p.add_argument("--out", help="study output directory (default: a new temporary one)")
    p.add_argument("--json", metavar="PATH", help="write the measured figures here")
    p.add_argument("--note", default="", help="what else ran on the machine, kept in the JSON")
    p.add_argument("--trials", metavar="CSV", help="no study: print the figures of a recorded results table "
                   "(e.g. benchmarks/results/tune_throughput_llama_depth34_trials.csv.gz)")
    args = p.parse_args()
    if args.trials:
        import pandas as pd

        from maya.tune import load_study

        print(json.dumps(table_figures(pd.read_csv(args.trials), load_study(args.config)), indent=2))
        return

    import ray

    from maya.tune import load_study, run_study

    study = load_study(args.config)
    study = replace(study, time_budget_s=args.minutes * 60,
                    **({"num_samples": args.num_samples} if study.search != "grid" else {}))
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="maya-tune-bench-"))
    ray.init(include_dashboard=False, log_to_driver=False)
    cpus = ray.cluster_resources().get("CPU")
    started = time.perf_counter()
    results = run_study(study, out)
    wall_s = time.perf_counter() - started
    table = results.table
    figures = {
        "command": f"python benchmarks/tune_throughput.py --config {os.path.relpath(args.config, ROOT)} "
                   f"--minutes {args.minutes} --num-samples {args.num_samples}",
        "config": os.path.relpath(args.config, ROOT),
        "search": study.search,
        "time_budget_min": args.minutes,
        "wall_s": round(wall_s, 1),
        "trials_finished": int(len(table)),
        "trials_per_minute": round(len(table) / (wall_s / 60), 2),
        **table_figures(table, study),
        "by_status": results.counts,
        "cache_hit_rate": results.cache_hit_rate,
        # HyperOpt's repeated proposals, answered by the searcher without a trial (maya/tune/pruning_searcher.py)
        "searcher": results.searcher,
        "best": results.best_config,
        "ray_cpus": cpus,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "commit": _commit(),
        "note": args.note,
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")


def table_figures(table, study) -> dict:
    """What a study's results table says about where its trials went (also for a committed trials
    CSV: `--trials`)."""
    evaluated = table[table["status"] != "pruned"]
    emulated = table[table["cache"] == "miss"]
    infeasible_emulated = emulated[emulated["status"] == "infeasible"]
    reasons = table["reason"].fillna("")
    return {
        # HyperOpt samples some configurations more than once (served by the trace cache): count each once too.
        "distinct_configurations": _distinct(table, study),
        "distinct_evaluated_not_pruned": _distinct(evaluated, study),
        "distinct_fits": _distinct(table[table["status"] == "ok"], study),
        "pruned": int((table["status"] == "pruned").sum()),
        "evaluated_not_pruned": int(len(evaluated)),
        "emulations": int(len(emulated)),
        "memory_dominated": int((table["cache"] == "dominated").sum()),
        "extrapolated": int((table["accum_emulated"].notna() | reasons.str.contains("to extrapolate")).sum()),
        "fits": int((table["status"] == "ok").sum()),
        "median_emulation_trial_s": float(emulated["evaluate_s"].median()) if len(emulated) else None,
        "trial_s": round(float(table["evaluate_s"].fillna(0).sum()), 1),
        "infeasible_emulated": int(len(infeasible_emulated)),
        "infeasible_emulated_trial_s": round(float(infeasible_emulated["evaluate_s"].sum()), 1),
        # a rank memory check's reason ends "... (rank N) > max_memory_fraction=..." (maya/tune/rank_memory_check.py)
        "stopped_by_rank_check": int(infeasible_emulated["reason"].fillna("").str.contains(r"\(rank \d+\) >").sum()),
        "best_objective": float(table.loc[table["status"] == "ok", "objective"].min()) if (table["status"] == "ok").any() else None,
        # failed trials by the exception their reason starts with
        "failed_by_error": {k: int(v) for k, v in
                            table.loc[table["status"] == "failed", "reason"].fillna("").str.split(":").str[0].value_counts().items()},
        # where the emulating trials' time went, by pipeline degree: {pp: [trials, trial-seconds]}
        "emulations_by_pp": ({str(pp): [int(len(g)), round(float(g["evaluate_s"].sum()), 1)]
                              for pp, g in emulated.groupby("pp")} if "pp" in emulated else None),
    }


def _distinct(table, study) -> int:
    """Configurations in `table` counted once each (the searched values, the cluster and the node count;
    without a pipeline, the schedule means nothing and is left out, as the trace cache does)."""
    columns = [c for c in (*study.search_space, "cluster", "nodes") if c in table.columns]
    values = table[columns].astype(str)
    if "pp_schedule" in values and "pp" in table:
        values.loc[table["pp"] == 1, "pp_schedule"] = "-"
    return int(len(values.drop_duplicates()))


def _commit() -> str | None:
    """The repository's HEAD commit, if git can tell."""
    import subprocess

    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() or None


if __name__ == "__main__":
    main()
