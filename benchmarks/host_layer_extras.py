"""The shipped CNN-layer host extras: the mean over every H200 lease that measured them, at the shipped machine's speed.

    python benchmarks/host_layer_extras.py            # print the figures
    python benchmarks/host_layer_extras.py --write    # store them in the shipped host_overhead.json

`maya profile --families host` measures four CNN-layer extras (`maya.estimator.host_overhead`): the host
time of a convolution and of a training batch norm, forward and backward, beyond a one-launch op. They
move several-fold between leases (a convolution's backward extra: 21.6 us on session 17's machine, 86.0
on session 22's), so one lease's reading is one draw of them. Each lease's figures are first scaled to
the machine of the shipped figures by the ratio of `autograd_backward_op_us` (the shipped file's / the
lease's), as the shipped file's other borrowed figures are (its `notes`), then averaged. `LEASES` lists
the host profiles measured with the current method (since commit 680d121; session 17's first two calls
used an older one that counted a `torch.autograd.grad` call's fixed cost in the backward extras).
Only the standard library and the project are needed.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HOST_FILE = ROOT / "maya" / "estimator" / "data" / "h200" / "host_overhead.json"
LEASES = (
    ROOT / "benchmarks" / "gpu" / "session17_h200" / "s17c" / "host" / "host_overhead.json",
    ROOT / "benchmarks" / "gpu" / "session22_h200" / "s22a" / "host" / "host_overhead.json",
)
"""`maya profile --families host` outputs of H200 leases, measured with the current CNN-extras method."""
EXTRAS = ("conv_forward_extra_us", "conv_backward_extra_us", "batch_norm_forward_extra_us",
          "batch_norm_backward_extra_us")
SPEED_FIGURE = "autograd_backward_op_us"


def scaled_extras(shipped: dict[str, float], lease: dict[str, float]) -> dict[str, float]:
    """One lease's CNN-layer extras at the shipped machine's host speed."""
    factor = shipped[SPEED_FIGURE] / lease[SPEED_FIGURE]
    return {key: lease[key] * factor for key in EXTRAS}


def mean_extras(shipped: dict[str, float], leases: list[dict[str, float]]) -> dict[str, float]:
    """The mean over `leases` of their scaled extras, rounded to 0.001 us."""
    scaled = [scaled_extras(shipped, lease) for lease in leases]
    return {key: round(statistics.mean(s[key] for s in scaled), 3) for key in EXTRAS}


def with_extras_note(notes: str, figures: dict[str, float]) -> str:
    """The shipped file's `notes` with its sentence on the CNN-layer extras (the one that starts with
    their names) replaced by one that says where `figures` come from."""
    names = ", ".join(EXTRAS[:-1]) + f" and {EXTRAS[-1]}"
    kept = [s for s in notes.split(". ") if s and not s.startswith(names)]
    leases = ", ".join(str(path.relative_to(ROOT)) for path in LEASES)
    sentence = (f"{names} ({', '.join(f'{figures[k]:.3f}' for k in EXTRAS)} us) are `python "
                f"benchmarks/host_layer_extras.py --write`: the mean over the H200 leases that measured them with the "
                f"current method ({leases}), each scaled to this machine's host speed by the ratio of {SPEED_FIGURE} "
                "(this file's / the lease's)")
    return ". ".join(s.rstrip(".") for s in kept) + ". " + sentence + "."


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--write", action="store_true", help=f"store the figures in {HOST_FILE.relative_to(ROOT)}")
    args = p.parse_args()
    data = json.loads(HOST_FILE.read_text())
    shipped = data["per_op_us"]
    leases = [json.loads(path.read_text())["per_op_us"] for path in LEASES]
    figures = mean_extras(shipped, leases)
    print(f"| lease file | {SPEED_FIGURE} | scale | " + " | ".join(EXTRAS) + " |")
    print("|---|---:|---:|" + "---:|" * len(EXTRAS))
    for path, lease in zip(LEASES, leases):
        scaled = scaled_extras(shipped, lease)
        factor = shipped[SPEED_FIGURE] / lease[SPEED_FIGURE]
        cells = " | ".join(f"{lease[k]:.1f} -> {scaled[k]:.1f}" for k in EXTRAS)
        print(f"| {path.relative_to(ROOT)} | {lease[SPEED_FIGURE]:.2f} | {factor:.3f} | {cells} |")
    print("| **mean, shipped** | " + f"{shipped[SPEED_FIGURE]:.2f} | | "
          + " | ".join(f"{figures[k]:.1f} (was {shipped[k]:.1f})" for k in EXTRAS) + " |")
    if args.write:
        shipped.update(figures)
        data["notes"] = with_extras_note(data["notes"], figures)
        HOST_FILE.write_text(json.dumps(data, indent=2) + "\n")
        print(f"wrote {HOST_FILE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
