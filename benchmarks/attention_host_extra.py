"""Host time a cuDNN attention call spends beyond a one-launch op, from profiled H200 steps.

    python benchmarks/attention_host_extra.py [--write]

Reads the Chrome traces of the calibration workloads (benchmarks/gpu/op_times_h200/*.trace.json.gz,
`op_time_probe.py --chrome`; held-out workloads are never profiled there). In each trace that runs
cuDNN's attention, it takes the median profiled CPU time of the forward op
(`aten::_scaled_dot_product_cudnn_attention`, on the threads that run the forward, inside
`aten::scaled_dot_product_attention`'s call) and of the backward op (`..._backward`, on the autograd
engine's thread), and beside each the median of the top-level calls of one-launch ops on the same
threads (`ONE_LAUNCH_FORWARD`, `ONE_LAUNCH_BACKWARD`). The extra of a
trace is (attention - one-launch) scaled from profiled to unprofiled time by `aten_op_us` over the
one-launch median, as `composite_op_extra_us` in host_overhead.json was measured; the figure kept is
the median over traces. cuDNN builds or looks up an execution plan on every call (the frontend's
graph cache), which a one-launch op does not do. `--write` stores both figures as
`attention_extra_us` in maya/estimator/data/h200/host_overhead.json (`maya.estimator.host_cost`
adds them to those ops' launches).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OP_TIMES = ROOT / "benchmarks" / "gpu" / "op_times_h200"
HOST_FILE = ROOT / "maya" / "estimator" / "data" / "h200" / "host_overhead.json"
sys.path.insert(0, str(ROOT / "benchmarks"))
from kernel_attribution import cpu_op_stacks, read_events  # noqa: E402

FORWARD_OP = "aten::_scaled_dot_product_cudnn_attention"
BACKWARD_OP = "aten::_scaled_dot_product_cudnn_attention_backward"
ONE_LAUNCH_FORWARD = ("aten::add", "aten::mul", "aten::gelu", "aten::relu", "aten::silu")
"""One-kernel ops whose top-level calls from Python are the forward's reference."""
ONE_LAUNCH_BACKWARD = ("aten::gelu_backward", "aten::silu_backward", "aten::threshold_backward", "aten::hardtanh_backward")
"""One-kernel backward ops (the activations' gradients) run by the autograd engine: the backward's reference."""


def profiled_durations(events: list[dict]) -> dict[tuple[str, bool, bool], list[float]]:
    """(op name, on an autograd engine thread, called at top level) -> profiled CPU durations (us).
    Top level: no aten op of the same thread encloses it (an engine thread's ops sit under its
    `autograd::engine::evaluate_function` and autograd node ranges, which do not count)."""
    out: dict[tuple[str, bool, bool], list[float]] = defaultdict(list)
    for e, stack, engine in cpu_op_stacks(events):
        top = not any(s["name"].startswith("aten::") for s in stack)
        out[(e["name"], engine, top)].append(e.get("dur", 0))
    return out


def call_extras(durations: dict[tuple[str, bool, bool], list[float]], ops: tuple[str, ...], engine: bool,
                aten_op_us: float) -> list[float]:
    """Unprofiled host us each call of `ops` spends beyond a one-launch op on the same threads (the
    forward's, or with `engine` the autograd engine's), from `profiled_durations`: (call - the
    one-launch median) scaled by aten_op_us over that median; empty where the trace has no such call
    or no one-launch reference."""
    refs = ONE_LAUNCH_BACKWARD if engine else ONE_LAUNCH_FORWARD
    ref = [x for name in refs for x in durations.get((name, engine, True), [])]
    if not ref:
        return []
    one = statistics.median(ref)
    return [(x - one) * aten_op_us / one for op in ops for top in (True, False) for x in durations.get((op, engine, top), [])]


def op_extra(durations: dict[tuple[str, bool, bool], list[float]], ops: tuple[str, ...], engine: bool,
             aten_op_us: float) -> float | None:
    """The median of `call_extras`; None where there is none."""
    extras = call_extras(durations, ops, engine, aten_op_us)
    return statistics.median(extras) if extras else None


def trace_extras(events: list[dict], aten_op_us: float) -> dict[str, float]:
    """{"forward"/"backward": extra unprofiled us} of one trace, for the directions it has (the
    forward op counted inside scaled_dot_product_attention's call too)."""
    d = profiled_durations(events)
    extras = {}
    for direction, op, engine in (("forward", FORWARD_OP, False), ("backward", BACKWARD_OP, True)):
        value = op_extra(d, (op,), engine, aten_op_us)
        if value is not None:
            extras[direction] = value
    return extras


def measured_traces(measure: Callable[[list[dict], float], dict], aten_op_us: float) -> dict[str, dict]:
    """Workload -> `measure(events, aten_op_us)` for each Chrome trace of `OP_TIMES` where it is not empty."""
    out = {}
    for path in sorted(OP_TIMES.glob("*.trace.json.gz")):
        result = measure(read_events(path), aten_op_us)
        if result:
            out[path.name.removesuffix(".trace.json.gz")] = result
    return out


def command_line(argv: list[str] | None, description: str, measure: Callable[[list[dict], float], dict],
                 what: str) -> tuple[argparse.Namespace, dict, float, dict[str, dict]]:
    """(--write given, the shipped host_overhead.json, its aten_op_us, `measured_traces(measure)`) of
    a host-extra command; exits naming `what` where no trace runs it."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--write", action="store_true", help="store the medians in host_overhead.json")
    args = p.parse_args(argv)
    host = json.loads(HOST_FILE.read_text())
    aten_op_us = host["per_op_us"]["aten_op_us"]
    per_trace = measured_traces(measure, aten_op_us)
    if not per_trace:
        sys.exit(f"no trace in {OP_TIMES} runs {what}")
    return args, host, aten_op_us, per_trace


def main(argv: list[str] | None = None) -> None:
    args, host, aten_op_us, per_trace = command_line(argv, __doc__.splitlines()[0], trace_extras, FORWARD_OP)
    print(f"aten_op_us {aten_op_us:.2f} (host_overhead.json); extra us beyond a one-launch op, per trace:")
    print("| workload | forward | backward |\n|---|---:|---:|")
    for name, extras in per_trace.items():
        print(f"| {name} | " + " | ".join(f"{extras[k]:.1f}" if k in extras else "-" for k in ("forward", "backward")) + " |")
    medians = {op: round(statistics.median(e[k] for e in per_trace.values() if k in e), 1)
               for op, k in ((FORWARD_OP, "forward"), (BACKWARD_OP, "backward"))}
    print("median over traces: " + ", ".join(f"{op} {us}" for op, us in medians.items()))
    if args.write:
        host["attention_extra_us"] = medians
        host["attention_extra_method"] = (
            "Host time beyond one launch of a cuDNN attention call (cuDNN's execution plan built or "
            "looked up on every call), `python benchmarks/attention_host_extra.py --write`: per Chrome "
            f"trace of benchmarks/gpu/op_times_h200 that runs it ({', '.join(per_trace)}), the median "
            "profiled CPU time of the op minus that of the trace's one-launch ops (forward: top-level "
            "add, mul, gelu, relu, silu; backward: the activation gradients on the autograd engine's "
            "thread), scaled to unprofiled time by aten_op_us over that one-launch median; the median "
            "over the traces.")
        HOST_FILE.write_text(json.dumps(host, indent=2) + "\n")
        print(f"wrote attention_extra_us to {HOST_FILE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
