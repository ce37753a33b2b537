"""Host time a CNN layer's convolution and batch norm spend beyond a one-launch op, from profiled H200 steps.

    python benchmarks/cnn_host_extra.py [--write]

Reads the Chrome traces of the calibration workloads (benchmarks/gpu/op_times_h200/*.trace.json.gz,
`op_time_probe.py --chrome`; held-out workloads are never profiled there). For each call of the ops
in `FIGURES` (the forward ops on the threads that run the forward: `aten::convolution` below
autocast's `aten::conv2d`, whose weight cast Maya charges as its own launch, and `aten::batch_norm`;
the backward ops on the autograd engine's thread) it takes the profiled CPU time less the median of
the same trace's top-level one-launch ops on those threads, scaled from profiled to unprofiled time
by `aten_op_us` over that median, as `attention_host_extra.py` measures cuDNN attention's extra
(`call_extras` there). The figure kept is the median over every call of every trace, floored at 0,
so that a trace with one convolution (ViT-B's patch embedding) weighs one call against a CNN's
fifty-odd. cuDNN looks up an execution plan for every convolution, and a training batch norm
launches several kernels and bookkeeping; a one-launch op does neither.

These replace the figures `maya profile --families host` measures with tiny layers
(`host_overhead._layer_extras_us`): those read 0-86 us between H200 leases for the same figure
(`benchmarks/host_lease_means.py` prints them), while the layers of real CNN steps read steadily
(this script prints each trace's). `--write` stores the medians in the `per_op_us` of
maya/estimator/data/h200/host_overhead.json (`maya.estimator.host_cost.LAYER_EXTRA_COST` charges
them) with a sentence in its `notes`.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from attention_host_extra import HOST_FILE, call_extras, command_line, profiled_durations  # noqa: E402
from host_lease_means import replace_sentence  # noqa: E402

FIGURES: dict[str, tuple[tuple[str, ...], bool]] = {
    "conv_forward_extra_us": (("aten::convolution",), False),
    "conv_backward_extra_us": (("aten::convolution_backward",), True),
    "batch_norm_forward_extra_us": (("aten::batch_norm",), False),
    "batch_norm_backward_extra_us": (("aten::native_batch_norm_backward", "aten::cudnn_batch_norm_backward"), True),
}
"""host_overhead.json figure -> (the profiled ops whose calls it describes, on the autograd engine's thread)."""


def trace_calls(events: list[dict], aten_op_us: float) -> dict[str, list[float]]:
    """Per `FIGURES` key, the extra of each call one trace profiled (none where it runs no such op)."""
    d = profiled_durations(events)
    return {key: extras for key, (ops, engine) in FIGURES.items() if (extras := call_extras(d, ops, engine, aten_op_us))}


def main(argv: list[str] | None = None) -> None:
    args, host, aten_op_us, per_trace = command_line(argv, __doc__.splitlines()[0], trace_calls,
                                                     "a convolution or a batch norm")
    keys = tuple(FIGURES)
    print(f"aten_op_us {aten_op_us:.2f} (host_overhead.json); extra us beyond a one-launch op, median (calls) per trace:")
    print("| workload | " + " | ".join(keys) + " |\n|---|" + "---:|" * len(keys))
    for name, calls in per_trace.items():
        print(f"| {name} | " + " | ".join(f"{statistics.median(calls[k]):.1f} ({len(calls[k])})" if k in calls else "-"
                                           for k in keys) + " |")
    medians = {k: round(max(statistics.median([x for c in per_trace.values() for x in c.get(k, [])]), 0.0), 1) for k in keys}
    shipped = host["per_op_us"]
    print("median over every call (shipped before): " + ", ".join(f"{k} {v} ({shipped.get(k, 0.0):.1f})" for k, v in medians.items()))
    if args.write:
        shipped.update(medians)
        sentence = (f"{', '.join(keys[:-1])} and {keys[-1]} ({', '.join(f'{medians[k]:.1f}' for k in keys)} us) are "
                    "`python benchmarks/cnn_host_extra.py --write`: per Chrome trace of benchmarks/gpu/op_times_h200 "
                    f"that runs convolutions ({', '.join(per_trace)}), the profiled CPU time of each call of "
                    "aten::convolution, aten::batch_norm (forward), aten::convolution_backward and the batch norm's "
                    "backward (autograd engine thread) minus the median of the thread's one-launch ops, scaled to "
                    "unprofiled time by aten_op_us over that median; the median over every call, floored at 0")
        host["notes"] = replace_sentence(host["notes"], keys, sentence)
        HOST_FILE.write_text(json.dumps(host, indent=2) + "\n")
        print(f"wrote {', '.join(keys)} to {HOST_FILE}")


if __name__ == "__main__":
    main()
