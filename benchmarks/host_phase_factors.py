"""How Maya's host-time model compares with real models' host issue time, per phase, on real GPU leases.

    python benchmarks/host_phase_factors.py [--write] [--out benchmarks/results/host_phase_factors_h200.md]
    python benchmarks/host_phase_factors.py --lease benchmarks/gpu/session35/s35o_h100

Reads benchmarks/gpu/host_phase_h200/<lease>/: per calibration workload, the host time a real step
spends issuing its forward, backward and optimizer step (benchmarks/gpu/host_phase_probe.py), and
that machine's host microbenchmarks (host_overhead*.json, `maya.estimator.host_overhead`, averaged
when run twice). It emulates each workload once (2 warm-up + 2 steps) and sums Maya's host cost of a
steady iteration per phase with that lease's microbenchmark figures (the CNN-layer extras: the shipped
in-situ ones at the lease's speed, as `maya emulate --host-profile` takes them) and no in-situ factor,
and prints measured / modelled per phase.

Only steps where the host, not the GPU, set the pace say anything about host cost (on a GPU-bound
step the host blocks on a full launch queue, and its issue time is the GPU's): a workload counts on a
lease when its profiled kernel time (`kernel_busy_ms`, benchmarks/gpu/op_times_h200, else the lease's
own `op_times/`; a workload profiled in neither is marked unknown and not counted) is under 80% of
the step measured on that lease, and it does not checkpoint activations (checkpoint regions have their
own figures). Held-out workloads are refused. `--lease DIR` reads those lease directories instead
(also in a device call's layout: `host*/host_overhead.json` and `host_phase/NAME.json.gz`), for
example another GPU's lease; its host-bound column still compares with the H200's kernel time, and
`--write` is refused with it. The forward factor is the median over workloads of
each workload's median ratio over leases; `--write` stores it as `forward_in_situ_factor` in
maya/estimator/data/h200/host_overhead.json (`maya.estimator.host_cost.host_costs_us` multiplies a
forward launch's `module_forward_op_us` by it).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "gpu" / "host_phase_h200"
OP_TIMES = ROOT / "benchmarks" / "gpu" / "op_times_h200"
HOST_FILE = ROOT / "maya" / "estimator" / "data" / "h200" / "host_overhead.json"
HOST_BOUND_BUSY_SHARE = 0.8
PHASES = ("forward", "backward", "optimizer")
sys.path.insert(0, str(ROOT / "benchmarks" / "validation"))
sys.path.insert(0, str(ROOT / "benchmarks"))
from suite import WORKLOADS  # noqa: E402


def lease_figures(lease: Path) -> dict[str, float]:
    """The lease's microbenchmark figures, averaged over its runs, less the CNN-layer extras
    (`maya.estimator.host_cost.IN_SITU_EXTRAS`), which the shipped file takes from profiled steps
    (benchmarks/cnn_host_extra.py): the model of every lease keeps the shipped ones."""
    from maya.estimator.host_cost import IN_SITU_EXTRAS

    files = sorted(lease.glob("host_overhead*.json")) or sorted(lease.glob("host*/host_overhead.json"))
    runs = [json.loads(p.read_text())["per_op_us"] for p in files]
    return {k: statistics.fmean(run[k] for run in runs) for k in runs[0] if k not in IN_SITU_EXTRAS}


def model_figures(lease: Path) -> dict[str, float]:
    """The figures Maya's host model takes for the lease: its microbenchmarks (`lease_figures`) with
    the shipped in-situ CNN extras put at its speed, as `maya emulate --host-profile` takes them
    (`maya.estimator.host_cost.with_in_situ_extras`)."""
    from maya.estimator.host_cost import with_in_situ_extras

    return with_in_situ_extras(lease_figures(lease))


def probe_files(lease: Path) -> dict[str, Path]:
    """Workload name -> the lease's host_phase_probe.py output (NAME.json.gz), beside its host profiles
    or in host_phase/."""
    files = sorted(lease.glob("*.json.gz")) or sorted(lease.glob("host_phase/*.json.gz"))
    return {f.name.split(".")[0]: f for f in files}


def measured_phases(probe: dict) -> dict[str, float]:
    """Median host issue time per phase (ms) over the probe's measured steps, and the CUDA-event step."""
    steps = probe["steps"][-len(probe["cuda_event_step_ms"]):]
    out = {p: statistics.median(s[f"{p}_ms"] for s in steps if s.get(f"{p}_ms") is not None) for p in PHASES}
    out["step"] = statistics.median(probe["cuda_event_step_ms"])
    return out


SHORT_RUN = ("--steps", "2", "--warmup", "2")
"""The arguments `emulated_trace` adds by default: 2 warm-up and 2 timed steps."""


def emulated_trace(name: str, root: Path, extra_args: tuple[str, ...] = SHORT_RUN) -> Path:
    """Emulate a calibration workload of the suite into `root/name` with its suite arguments and
    `extra_args` (default 2 warm-up and 2 timed steps; () runs it as benchmarks/validate.py does); the
    rank-0 trace file."""
    from maya.api import emulate

    w = next(w for w in WORKLOADS if w.name == name)
    if w.held_out:
        raise SystemExit(f"{name} is held out: it may not set a calibration constant")
    out = root / name
    script = Path(ROOT / "benchmarks" / "validation" / "workloads" / w.script)
    with contextlib.redirect_stdout(io.StringIO()):
        summary = emulate(str(script), [*w.argv, *extra_args], gpu="h200", trace_dir=out)
    if summary.exit_code != 0:
        raise SystemExit(f"{name}: emulation failed\n{summary.error}")
    return out / "rank=0" / "trace.parquet"


def modelled_phases(trace: Path, figures: dict[str, float]) -> dict[str, float]:
    """Maya's host time per phase (ms) of the trace's third iteration, with `figures` and no in-situ factor."""
    import pyarrow.parquet as pq

    from maya.estimator.host_cost import host_costs_us

    df = pq.read_table(trace).to_pandas()
    df = df[df["iteration"] == 2].reset_index(drop=True)
    host = host_costs_us(df, per_op_us=figures, forward_factor=1.0)
    return {p: float(host[(df["phase"] == p).to_numpy()].sum()) / 1e3 for p in PHASES}


def in_situ_ratio(ratios: dict[str, list[float]]) -> float:
    """A phase's in-situ factor from each host-bound workload's measured / modelled ratios over the leases:
    the median over workloads of each workload's median over leases."""
    return statistics.median(statistics.median(r) for r in ratios.values())


def kernel_busy_ms(name: str, lease: Path) -> float | None:
    """GPU kernel time of one profiled step of `name` (op_time_probe.py's `kernel_busy_ms`): the H200
    profile in benchmarks/gpu/op_times_h200, else the lease's own (`LEASE/op_times/`), else None."""
    for path in (OP_TIMES / f"{name}.json", lease / "op_times" / f"{name}.json"):
        if path.is_file():
            return json.loads(path.read_text())["kernel_busy_ms"]
    return None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--write", action="store_true", help="store the forward factor in host_overhead.json")
    p.add_argument("--out", type=Path, help="also write the printed table and factor to this markdown file")
    p.add_argument("--lease", type=Path, action="append", help="read this lease directory instead of the H200 ones")
    args = p.parse_args()
    if args.lease and args.write:
        p.error("--write sets the H200 factor from the H200 leases: not with --lease")
    lines: list[str] = []

    def emit(line: str = "") -> None:
        print(line)
        lines.append(line)

    held_out = {w.name for w in WORKLOADS if w.held_out}
    # The leases the probe ran on (lease_d onwards measured the ground truth alone, no microbenchmarks).
    leases = args.lease or sorted(d for d in DATA.iterdir() if d.is_dir() and any(d.glob("host_overhead*.json")))
    probes = {lease: probe_files(lease) for lease in leases}
    names = sorted({name for files in probes.values() for name in files} & {w.name for w in WORKLOADS})
    ratios: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        traces = {n: emulated_trace(n, Path(tmp)) for n in names if n not in held_out}
        emit("| lease | workload | measured step ms | host-bound | " + " | ".join(f"{p} measured / model ms" for p in PHASES) + " |")
        emit("|---|---|---:|---|" + "---:|" * len(PHASES))
        for lease in leases:
            figures = model_figures(lease)
            for name, trace in traces.items():
                path = probes[lease].get(name)
                if path is None:
                    continue
                measured = measured_phases(json.loads(gzip.decompress(path.read_bytes())))
                model = modelled_phases(trace, figures)
                busy = kernel_busy_ms(name, lease)
                checkpoints = "--checkpoint" in next(w for w in WORKLOADS if w.name == name).argv
                host_bound = busy is not None and busy < HOST_BOUND_BUSY_SHARE * measured["step"] and not checkpoints
                if host_bound:
                    ratios.setdefault(name, []).append(measured["forward"] / model["forward"])
                cells = " | ".join(f"{measured[p]:.2f} / {model[p]:.2f} = {measured[p] / model[p]:.2f}" for p in PHASES)
                bound = "unknown (never profiled)" if busy is None else "yes" if host_bound else "no"
                emit(f"| {lease.name} | {name} | {measured['step']:.2f} | {bound} | {cells} |")
    per_workload = {n: statistics.median(r) for n, r in ratios.items()}
    emit()
    emit(f"- forward measured / modelled, host-bound steps: {json.dumps({n: round(v, 3) for n, v in per_workload.items()})}")
    shipped = json.loads(HOST_FILE.read_text()).get("forward_in_situ_factor")
    factor = round(in_situ_ratio(ratios), 3) if per_workload else None
    if factor is None:
        emit(f"- forward_in_situ_factor: no host-bound calibration step to fit it on; shipped: {shipped}")
    else:
        emit(f"- forward_in_situ_factor = {factor} (median over {len(per_workload)} workloads); shipped: {shipped}")
    if args.out:
        leases_arg = "".join(f" --lease {d}" for d in args.lease or [])
        source = ", ".join(f"`{d}`" for d in args.lease) if args.lease else "`benchmarks/gpu/host_phase_h200/`"
        header = ["# Host issue time per phase: real GPU steps against Maya's host model", "",
                  f"- Made by `python benchmarks/host_phase_factors.py{leases_arg} --out {args.out}` from "
                  f"{source} (commands in its COMMANDS.md); model figures are each lease's own "
                  "microbenchmarks (the CNN-layer extras: the shipped in-situ ones at the lease's speed, as "
                  "`--host-profile` takes them), without the in-situ factor.",
                  "- Backward microbenchmark: lease_n (session 35) and later by the current method (gradients unset "
                  "before each call, the engine's fixed cost per call apart: "
                  "`maya.estimator.host_overhead.backward_costs_us`); the earlier leases by the method before it, "
                  "which read a median 1.79x the current one in one process (benchmarks/gpu/session35).", ""]
        args.out.write_text("\n".join(header + lines) + "\n")
    if args.write:
        if factor is None:
            p.error("no host-bound calibration step: nothing to write")
        data = json.loads(HOST_FILE.read_text())
        data["forward_in_situ_factor"] = factor
        data["forward_in_situ_method"] = (
            "python benchmarks/host_phase_factors.py --write: median over host-bound calibration workloads "
            f"({', '.join(sorted(per_workload))}) of the median over H200 leases (benchmarks/gpu/host_phase_h200) "
            "of the measured host time to issue a forward over Maya's forward host time with that lease's "
            "microbenchmark figures; multiplies module_forward_op_us for forward launches."
        )
        HOST_FILE.write_text(json.dumps(data, indent=2) + "\n")
        print(f"wrote {HOST_FILE}")


if __name__ == "__main__":
    main()
