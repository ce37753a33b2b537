"""Fit the FSDP2 and DTensor host figures of host_overhead.json from the H200 host-time study (issue #8).

Runs on the CPU with Maya installed. It reads the measurements in benchmarks/gpu/host_profile_h200x4/
(see its README) and emulates the same train_gpt.py configurations with Maya, so that each measured
host phase can be set against what Maya charges the trace rows of that phase.

- `fsdp_unit_us`, `fsdp_unit_per_param_us`: benchmarks/gpu/fsdp_unit_probe.py on 2 and 4 GPUs
  (lease2/fsdp_unit_{2,4}.json). That is the host time of one FSDP2 unit's forward and backward, per
  unit, under train_gpt's mixed-precision policy and autocast. The extra GPU ops FSDP2 issues are taken
  off at `aten_op_us` each, because Maya charges them as kernel rows. A line through the two block
  kinds (2 and 12 parameters) gives the fixed and per-parameter shares. The 2- and 4-GPU lines are
  averaged.
- `dtensor_list_entry_us`: the FSDP2 runs' clipping + optimizer + zero_grad host time, less what Maya
  charges the non-DTensor rows of that part of the trace and `dtensor_op_us` per DTensor op row,
  divided by the DTensor list entries of the foreach ops there. Averaged over the fsdp runs (2 leases x
  2 and 4 GPUs).
- `dtensor_op_us`: the TP2 x FSDP2 runs' forward + backward host time, less Maya's charges for the
  non-DTensor rows, the FSDP2 units (at the figures above) and the list entries, divided by the
  DTensor op rows there. Averaged over the tp2_fsdp runs.

    python benchmarks/gpu/fit_framework_overhead.py
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

import maya
from maya.estimator.host_cost import host_costs_us, host_overhead
from maya.trace.store import read_rank_trace

STUDY = Path(__file__).resolve().parent / "host_profile_h200x4"
SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "train_gpt.py"
LEASES = ("lease1", "lease2")
GPU_COUNTS = (2, 4)


def unit_line_us(aten_op_us: float) -> tuple[float, float]:
    """(fixed, per-parameter) host microseconds of one FSDP2 unit, from the probe on 2 and 4 GPUs."""
    lines = []
    for gpus in GPU_COUNTS:
        probe = json.loads((STUDY / "lease2" / f"fsdp_unit_{gpus}.json").read_text())
        (pa, ca), (pb, cb) = [
            (p["params_per_unit"], p["extra_us_per_unit"] - p["extra_gpu_ops_per_unit"] * aten_op_us)
            for p in probe["probes"]
        ]
        per_param = (cb - ca) / (pb - pa)
        lines.append((ca - per_param * pa, per_param))
    return statistics.mean(f for f, _ in lines), statistics.mean(p for _, p in lines)


def iteration_rows(trace: pd.DataFrame, iteration: int = 1) -> pd.DataFrame:
    """Rank 0's rows of one iteration with their host cost and the measured phase they fall in:
    forward (up to the first backward row), backward (to the last backward row), tail (clipping,
    optimizer step, zero_grad)."""
    rows = trace[trace["iteration"] == iteration].sort_values("seq").reset_index(drop=True)
    rows["host_us"] = host_costs_us(rows)
    backward = np.flatnonzero(rows["phase"].to_numpy() == "backward")
    part = np.full(len(rows), "tail", dtype=object)
    part[: backward[0]] = "forward"
    part[backward[0] : backward[-1] + 1] = "backward"
    rows["part"] = part
    rows["entries"] = rows["attrs"].map(lambda a: json.loads(a).get("ops", 0) if isinstance(a, str) else 0)
    return rows


def charges(rows: pd.DataFrame, parts: tuple[str, ...]) -> dict[str, float]:
    """Maya's host microseconds for the non-framework rows of `parts`, and the framework row counts."""
    sel = rows[rows["part"].isin(parts)]
    dtensor, units = sel[sel["op"] == "dtensor:op"], sel[sel["op"] == "fsdp:unit"]
    return {
        "base_us": float(sel.loc[~sel["op"].isin(["dtensor:op", "fsdp:unit"]), "host_us"].sum()),
        "dtensor_ops": len(dtensor), "dtensor_entries": int(dtensor["entries"].sum()),
        "units": len(units), "unit_params": int(units["entries"].sum()),
    }


def emulated_rows(argv: list[str], gpus: int, trace_dir: Path) -> pd.DataFrame:
    """Rank 0's second iteration of train_gpt.py `argv` emulated on `gpus` H200s (kept in `trace_dir`:
    an emulation already there is read back)."""
    if not (trace_dir / "meta.json").exists():
        summary = maya.emulate(SCRIPT, [*argv, "--steps", "3"], gpu="h200", nnodes=1, nproc_per_node=gpus,
                               trace_dir=trace_dir)
        if summary.exit_code != 0:
            raise RuntimeError(f"emulation of {argv} on {gpus} GPUs failed: {summary.error}")
    return iteration_rows(read_rank_trace(trace_dir, 0).to_pandas())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trace-root", type=Path, help="keep the emulated traces here and reuse them (default: a temporary directory)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        fit(args.trace_root or Path(tmp))


def fit(trace_root: Path) -> None:
    costs = host_overhead("h200")
    fixed_us, per_param_us = unit_line_us(costs["aten_op_us"])
    traces = {}
    for name in ("fsdp", "tp2_fsdp"):
        for gpus in GPU_COUNTS:
            argv = json.loads((STUDY / "lease1" / f"{name}_{gpus}" / "host_profile.json").read_text())["train_gpt_argv"]
            traces[name, gpus] = emulated_rows(argv, gpus, trace_root / f"{name}_{gpus}")

    def measured_ms(lease: str, name: str, gpus: int) -> dict[str, float]:
        return json.loads((STUDY / lease / f"{name}_{gpus}" / "host_profile.json").read_text())["median"]["host_ms"]

    # The list-entry fit takes dtensor_op_us per DTensor row and the op fit takes the entry cost:
    # two rounds settle both (the tail has 16 DTensor rows against ~2,400 entries).
    op_us = costs["dtensor_op_us"]
    for _ in range(2):
        entry_fits = []
        for lease in LEASES:
            for gpus in GPU_COUNTS:
                m = measured_ms(lease, "fsdp", gpus)
                tail = charges(traces["fsdp", gpus], ("tail",))
                measured_us = (m["clip"] + m["optimizer"] + m["zero_grad"]) * 1e3
                entry_fits.append((measured_us - tail["base_us"] - tail["dtensor_ops"] * op_us) / tail["dtensor_entries"])
        entry_us = statistics.mean(entry_fits)
        op_fits = []
        for lease in LEASES:
            for gpus in GPU_COUNTS:
                m = measured_ms(lease, "tp2_fsdp", gpus)
                c = charges(traces["tp2_fsdp", gpus], ("forward", "backward"))
                rest_us = ((m["forward"] + m["backward"]) * 1e3 - c["base_us"] - c["units"] * fixed_us
                           - c["unit_params"] * per_param_us - c["dtensor_entries"] * entry_us)
                op_fits.append(rest_us / c["dtensor_ops"])
        op_us = statistics.mean(op_fits)
    result = {
        "fsdp_unit_us": fixed_us, "fsdp_unit_per_param_us": per_param_us,
        "dtensor_list_entry_us": entry_us, "dtensor_op_us": op_us,
        "dtensor_list_entry_us_per_run": entry_fits, "dtensor_op_us_per_run": op_fits,
        "runs": [f"{lease} {gpus} GPUs" for lease in LEASES for gpus in GPU_COUNTS],
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
