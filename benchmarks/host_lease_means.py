"""Shipped host figures borrowed from other leases: the mean over every H200 lease that measured them.

    python benchmarks/host_lease_means.py            # print the figures
    python benchmarks/host_lease_means.py --write    # store them in the shipped host_overhead.json

Most of the shipped H200 host figures (`maya/estimator/data/h200/host_overhead.json`) come from the
machine of the first ground truth. Two groups were added to `maya profile --families host` later and
come from other leases (`GROUPS`): a cuDNN RNN's host time per time step, and an activation-checkpoint
region's fixed and per-recomputed-op cost. They move several-fold between leases, so one lease's
reading is one draw. Each lease's figures are scaled to the shipped machine by the ratio of
`autograd_backward_op_us` (the shipped file's / the lease's), then averaged over the group's leases:
those that measured the group with its current method (the RNN figures since a139c53; the
checkpoint figures' method is unchanged since 84b24be). The CNN-layer extras (a convolution's and a
training batch norm's host time beyond a one-launch op) were a third group until session 28; they
moved 0-86 us between leases and now come from profiled CNN steps (`benchmarks/cnn_host_extra.py`).
Profiles from session 35 on (`benchmarks/gpu/session35`, `host_phase_h200/lease_n`) measure
`autograd_backward_op_us` without the engine's fixed cost per call and without gradient
accumulation (`maya.estimator.host_overhead.backward_costs_us`; the old figure read 1.8x the new in
the same process, `benchmarks/gpu/session35/*/backward_host.json`), and their checkpoint figures are
net of that figure: they are not this script's speed reference's kind and are in no group.
Only the standard library and the project are needed.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GPU = ROOT / "benchmarks" / "gpu"
HOST_FILE = ROOT / "maya" / "estimator" / "data" / "h200" / "host_overhead.json"
SPEED_FIGURE = "autograd_backward_op_us"

_S17 = GPU / "session17_h200"
_S22 = GPU / "session22_h200" / "s22a" / "host" / "host_overhead.json"
_S23 = GPU / "session23_h200" / "s23a" / "host" / "host_overhead.json"
_S27 = GPU / "session27_h200" / "s26a" / "host" / "host_overhead.json"
_L = GPU / "host_phase_h200" / "lease_l" / "host_overhead.json"
_M = GPU / "host_phase_h200" / "lease_m" / "host_overhead.json"
_PHASE = GPU / "host_phase_h200"
GROUPS: dict[tuple[str, ...], tuple[Path, ...]] = {
    ("rnn_cell_forward_us", "rnn_cell_backward_us"):
        (_S17 / "s17a" / "host" / "host_overhead.json", _S17 / "s17b" / "host" / "host_overhead.json",
         _S17 / "s17c" / "host" / "host_overhead.json", _S22, _S23, _S27, _L, _M),
    ("checkpoint_region_us", "checkpoint_per_op_us"):
        (GPU / "host_overhead_h200_lease9_run1.json", GPU / "host_overhead_h200_lease9_run2.json",
         _PHASE / "lease_a" / "host_overhead.json", _PHASE / "lease_b" / "host_overhead.json",
         _PHASE / "lease_b" / "host_overhead_after.json", _PHASE / "lease_c" / "host_overhead_run1.json",
         _PHASE / "lease_c" / "host_overhead_run2.json", GPU / "host_profile_h200x4" / "lease1" / "host_overhead.json",
         GPU / "multi_gpu_h200x2" / "host_overhead_h200x2.json",
         GPU / "rnn_sleep_h200" / "host_overhead_2026-12-02.json", _S17 / "s17a" / "host" / "host_overhead.json",
         _S17 / "s17b" / "host" / "host_overhead.json", _S17 / "s17c" / "host" / "host_overhead.json", _S22, _S23, _S27, _L,
         _M),
}
"""Figure names -> the `maya profile --families host` outputs (one per lease and run) that measured
them with the current method."""

CURRENT_BACKWARD: dict[str, tuple[Path, ...]] = {
    "lease_n (H200)": (_PHASE / "lease_n" / "host_overhead_run1.json", _PHASE / "lease_n" / "host_overhead_run2.json"),
    "lease_o (H200)": (_PHASE / "lease_o" / "host_overhead_run1.json", _PHASE / "lease_o" / "host_overhead_run2.json"),
    "s35o (H100)": (GPU / "session35" / "s35o_h100" / "host" / "host_overhead.json",
                    GPU / "session35" / "s35o_h100" / "host_after" / "host_overhead.json"),
    "s36a (H100)": (GPU / "session36" / "s36a" / "host" / "host_overhead.json",
                    GPU / "session36" / "s36a" / "host_after" / "host_overhead.json"),
}
"""Leases whose host profiles measured `autograd_backward_op_us` by the current method (session 35 on):
printed at the shipped machine's speed beside the shipped figure (the old method's, not rescaled)."""

BACKWARD_SPEED_FIGURES = ("module_forward_op_us", "aten_op_us")
"""Figures measured the same way before and after session 35, by which those leases' backward figure
is put at the shipped machine's speed (each lease's mean over its runs)."""


SPEED_RANK_FIGURES = ("aten_op_us", "module_forward_op_us", "autograd_backward_op_us")
"""Figures whose shipped value is ranked among the leases' (the checkpoint group's profiles: every H200
lease profile measured by the backward method before session 35)."""


def shipped_rank(shipped: dict[str, float], leases: list[dict[str, float]], key: str) -> tuple[int, float]:
    """(1 + how many leases read `key` faster than the shipped machine, the leases' median)."""
    values = [lease[key] for lease in leases]
    return 1 + sum(v < shipped[key] for v in values), statistics.median(values)


def current_backward_at_shipped_speed(shipped: dict[str, float], runs: list[dict[str, float]]) -> dict[str, float]:
    """Speed figure -> the runs' mean `autograd_backward_op_us` at the shipped speed by that figure."""
    lease = {key: statistics.fmean(run[key] for run in runs) for key in (SPEED_FIGURE, *BACKWARD_SPEED_FIGURES)}
    return {key: scaled(shipped, lease, (SPEED_FIGURE,), speed=key)[SPEED_FIGURE] for key in BACKWARD_SPEED_FIGURES}


def scaled(shipped: dict[str, float], lease: dict[str, float], keys: tuple[str, ...],
           speed: str = SPEED_FIGURE) -> dict[str, float]:
    """One lease's `keys` at the shipped machine's host speed, by the ratio of figure `speed`."""
    factor = shipped[speed] / lease[speed]
    return {key: lease[key] * factor for key in keys}


def mean_figures(shipped: dict[str, float], leases: list[dict[str, float]], keys: tuple[str, ...]) -> dict[str, float]:
    """The mean over `leases` of their scaled `keys`, rounded to 0.001 us."""
    each = [scaled(shipped, lease, keys) for lease in leases]
    return {key: round(statistics.mean(s[key] for s in each), 3) for key in keys}


def names(keys: tuple[str, ...]) -> str:
    """`a, b and c`: how the shipped file's notes name a group of figures."""
    return ", ".join(keys[:-1]) + f" and {keys[-1]}"


def with_note(notes: str, keys: tuple[str, ...], figures: dict[str, float], sources: tuple[Path, ...]) -> str:
    """The shipped file's `notes` with its sentence on `keys` (the one that starts with their names)
    replaced by one that says where `figures` come from."""
    files = ", ".join(str(path.relative_to(ROOT)) for path in sources)
    sentence = (f"{names(keys)} ({', '.join(f'{figures[k]:.3f}' for k in keys)} us) are `python "
                f"benchmarks/host_lease_means.py --write`: the mean over the {len(sources)} host profiles of H200 "
                f"leases that measured them with the current method ({files}), each scaled to this machine's host "
                f"speed by the ratio of {SPEED_FIGURE} (this file's / the lease's)")
    return replace_sentence(notes, keys, sentence)


def replace_sentence(notes: str, keys: tuple[str, ...], sentence: str) -> str:
    """`notes` with its sentence on `keys` (the one that starts with their names) replaced by
    `sentence` (without its full stop), put last."""
    kept = [s for s in notes.split(". ") if s and not s.startswith(names(keys))]
    return ". ".join(s.rstrip(".") for s in kept) + ". " + sentence + "."


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--write", action="store_true", help=f"store the figures in {HOST_FILE.relative_to(ROOT)}")
    args = p.parse_args()
    data = json.loads(HOST_FILE.read_text())
    shipped = data["per_op_us"]
    for keys, sources in GROUPS.items():
        leases = [json.loads(path.read_text())["per_op_us"] for path in sources]
        figures = mean_figures(shipped, leases, keys)
        print(f"\n| host profile | {SPEED_FIGURE} | scale | " + " | ".join(keys) + " |")
        print("|---|---:|---:|" + "---:|" * len(keys))
        for path, lease in zip(sources, leases):
            each = scaled(shipped, lease, keys)
            cells = " | ".join(f"{lease[k]:.1f} -> {each[k]:.1f}" for k in keys)
            print(f"| {path.relative_to(ROOT)} | {lease[SPEED_FIGURE]:.2f} | "
                  f"{shipped[SPEED_FIGURE] / lease[SPEED_FIGURE]:.3f} | {cells} |")
        print(f"| **mean** (shipped before) | {shipped[SPEED_FIGURE]:.2f} | | "
              + " | ".join(f"{figures[k]:.3f} ({shipped[k]:.3f})" for k in keys) + " |")
        if args.write:
            shipped.update(figures)
            data["notes"] = with_note(data["notes"], keys, figures, sources)
    profiles = GROUPS[("checkpoint_region_us", "checkpoint_per_op_us")]
    leases = [json.loads(path.read_text())["per_op_us"] for path in profiles]
    print(f"\nThe shipped figures among the {len(leases)} H200 lease profiles of the checkpoint group (1 = fastest)")
    for key in SPEED_RANK_FIGURES:
        rank, median = shipped_rank(shipped, leases, key)
        print(f"- {key}: shipped {shipped[key]:.2f} us, rank {rank} of {len(leases) + 1}, the leases' median {median:.2f} us")
    print(f"\n{SPEED_FIGURE} by the current method at the shipped machine's speed (shipped: {shipped[SPEED_FIGURE]:.2f} us, "
          "the old method's)")
    for lease, sources in CURRENT_BACKWARD.items():
        runs = [json.loads(path.read_text())["per_op_us"] for path in sources]
        at = current_backward_at_shipped_speed(shipped, runs)
        print(f"- {lease}: " + ", ".join(f"{v:.1f} us scaled by {k}" for k, v in at.items()))
    if args.write:
        HOST_FILE.write_text(json.dumps(data, indent=2) + "\n")
        print(f"\nwrote {HOST_FILE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
