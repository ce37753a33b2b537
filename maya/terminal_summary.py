"""`terminal_summary`: the one-page text that `maya emulate` and `maya simulate` print for a run."""

from __future__ import annotations

from maya.hardware import load_gpu
from maya.summary import HOST_BOUND_SHARE, EmulationSummary
from maya.throughput import MFU_PEAK_DTYPE

PERFETTO_URL = "https://ui.perfetto.dev"
_GIB, _MIB = 1 << 30, 1 << 20
_SHOWN_ITERATIONS = 6
_SHOWN_RANKS = 8
_LABEL_WIDTH = 15


def terminal_summary(summary: EmulationSummary, *, top_n: int = 5) -> str:
    """A one-page human summary of a run: step time, throughput, MFU, memory, breakdown, top ops and modules.

    Args:
        summary: what `maya.emulate` or `maya.simulate_trace_dir` returned.
        top_n: how many ops and modules to list.

    Returns:
        Lines of text without a trailing newline; figures that are not known are left out or say why.
    """
    d = summary.to_dict()
    gpu = load_gpu(summary.gpu)
    lines = [_headline(summary, d, gpu.name)]
    lines += _timing(summary, d)
    lines += _memory(summary, d, gpu.key)
    steps = _counted_iterations(summary, d)
    lines += _breakdown(d, summary.world_size, steps)
    per_gpu_step = steps * summary.world_size  # the sums below are over every rank and counted iteration
    if phases := d.get("gpu_ms_by_phase"):
        total = sum(phases.values()) or 1.0
        lines.append(_row("GPU by phase", ", ".join(f"{phase} {ms / per_gpu_step:,.2f} ms ({ms / total:.0%})"
                                                     for phase, ms in phases.items())))
    for key, label in (("top_ops", "top ops"), ("top_modules", "top modules")):
        for i, row in enumerate((d.get(key) or [])[:top_n]):
            name = row.get("op", row.get("module"))
            if row.get("kind", "kernel") != "kernel":
                name += f" ({row['kind']})"
            if row.get("instances", 1) > 1:
                name += f" ({row['instances']} modules)"
            elif name == "<top>":
                name += " (in no submodule: the loss, the optimizer, the model's own forward code)"
            lines.append(_row(label if i == 0 else "",
                              f"{row['share']:6.1%} {row['gpu_ms'] / per_gpu_step:10.3f} ms  {name}"))
    if d.get("top_ops"):
        if d.get("from_iteration", 0) >= 1:
            lines.append(_row("", "(GPU time per GPU and iteration, the mean over all ranks and the iterations "
                                  "after the first, which holds the set-up; estimates too)"))
        else:
            lines.append(_row("", "(GPU time per GPU and iteration, the mean over all ranks and iterations)"))
    if sources := d.get("estimate_sources"):
        shown = [f"{source} {share:.0%}" for source, share in sources.items() if share > 0]
        lines.append(_row("estimates", ", ".join(shown) + " of predicted GPU time"))
        transferred = sum(share for source, share in sources.items() if str(source).endswith("-transfer"))
        if transferred > 0:
            lines.append(_row("", f"lower confidence: {transferred:.0%} scaled from the H200's models by catalog "
                                  "ratios (no profiles of this GPU; docs/accuracy.md, \"Another GPU\")"))
    if d.get("timeline"):
        lines.append(_row("timeline", f"{d['timeline']} (open it in {PERFETTO_URL})"))
    lines.append(_row("trace", summary.trace_dir))
    return "\n".join(lines)


def _counted_iterations(summary: EmulationSummary, d: dict) -> int:
    """How many iterations the breakdown, the top ops and modules and the phases sum over: the completed
    ones from `from_iteration` on (at least 1)."""
    first = d.get("from_iteration", 0)
    return max(1, sum(1 for it in summary.iterations if it.index >= first and it.time_ms is not None))


def _row(label: str, text: str) -> str:
    return f"  {label:<{_LABEL_WIDTH}}{text}"


def _headline(summary: EmulationSummary, d: dict, gpu_name: str) -> str:
    where = f"{summary.world_size} x {gpu_name}"
    if cluster := d.get("cluster"):
        nodes = cluster["nodes"]
        where += f" (cluster {cluster['name']}: {nodes} node{'s' if nodes > 1 else ''} x {cluster['gpus_per_node']} GPUs)"
    return f"Maya prediction: {where}, emulated ranks {summary.emulated_ranks}"


def _timing(summary: EmulationSummary, d: dict) -> list[str]:
    times = [it.time_ms for it in summary.iterations if it.time_ms is not None]
    if not times:
        why = "the script ran out of memory" if summary.oom else (
            "the script failed" if summary.exit_code else "no timed iteration")
        return [_row("step time", f"n/a ({why})")]
    shown = ", ".join(f"{t:.2f}" for t in times[:_SHOWN_ITERATIONS]) + (", ..." if len(times) > _SHOWN_ITERATIONS else "")
    failed = " completed before the script failed" if summary.exit_code else ""
    lines = [_row("step time", f"{d['median_iteration_ms']:.2f} ms, median of {len(times)} iteration(s){failed}: "
                               f"{shown} ms")]
    if len(times) == 2 and times[0] > 1.2 * times[1]:
        lines.append(_row("", "the first iteration holds the set-up, so the median of two is half set-up: run 3 or "
                              f"more steps for a steady-state median (the second alone: {times[1]:.2f} ms)"))
    rate = summary.throughput
    if rate is None:  # a step of no GPU work takes no predicted time: no rate to give
        lines.append(_row("throughput", "n/a (the step ran no GPU work)"))
        return lines
    text = ", ".join([
        f"{rate.iterations_per_s:,.2f} iterations/s",
        f"{rate.samples_per_s:,.1f} samples/s" if rate.samples_per_s is not None else "samples/s n/a",
        f"{rate.tokens_per_s:,.0f} tokens/s" if rate.tokens_per_s is not None else "tokens/s n/a",
    ])
    if rate.samples_per_s is None or rate.tokens_per_s is None:
        text += " (samples or tokens per iteration not given)"
    lines.append(_row("throughput", text))
    if rate.mfu is None:
        lines.append(_row("MFU", "n/a (model FLOPs over all ranks unknown)"))
    else:
        lines.append(_row("MFU", (
            f"{rate.mfu * 100:.3g}% ({_flops(rate.model_flops_per_iteration)} per iteration on "
            f"{summary.world_size} GPU(s) of {rate.peak_flops_per_s / 1e12:,.1f} TFLOP/s dense {MFU_PEAK_DTYPE} peak)"
        )))
    return lines


def _memory(summary: EmulationSummary, d: dict, gpu_key: str) -> list[str]:
    capacity = summary.memory_capacity_bytes
    text = (
        f"peak allocated {_size(summary.peak_allocated_bytes)}, reserved {_size(summary.peak_reserved_bytes)} "
        f"of {_size(capacity)} per GPU ({gpu_key})"
    )
    # The figures are the slowest rank's (the JSON contract); another rank may hold more.
    per_rank = {int(r): b for r, b in (d.get("peak_allocated_bytes_per_representative") or {}).items()}
    if per_rank and max(per_rank.values()) > summary.peak_allocated_bytes:
        most = max(per_rank, key=lambda r: (per_rank[r], -r))
        text += (f" on the slowest rank ({d.get('slowest_rank')}); rank {most}'s class peaks higher, at "
                 f"{_size(per_rank[most])} allocated")
    emulated = d.get("emulated_gpu")
    if summary.oom:
        text += ": OUT OF MEMORY"
    elif emulated and emulated != gpu_key:
        fits = "fits" if summary.peak_reserved_bytes <= capacity else f"does NOT fit in the {gpu_key}'s memory"
        text += f": {fits}; figures from the emulated {emulated}'s allocator"
    else:
        text += ": fits"
    return [_row("memory", text)]


def _breakdown(d: dict, world_size: int, steps: int) -> list[str]:
    """The slowest rank's time buckets (and each representative rank's), per iteration: the JSON's sums
    over the `steps` counted iterations, divided by them."""
    if not d.get("breakdown_ms"):
        return []
    b = {key: ms / steps for key, ms in d["breakdown_ms"].items()}
    ranks = [{**r, **{key: r[key] / steps for key in (*_BUCKETS, "total_ms")}}
             for r in d.get("rank_breakdowns_ms") or []]
    slowest = d.get("slowest_rank")
    total = sum(b.values())
    if slowest is not None:
        who = f"rank {slowest} (slowest)"
    else:
        who = "rank 0" if world_size == 1 else "slowest rank"
    span = "the iterations after the first" if d.get("from_iteration", 0) >= 1 else "all iterations"
    lines = [_row("breakdown", f"{who}, per iteration (mean of {span}): {total:,.2f} ms"), _row("", _buckets(b, total))]
    if total and b.get("host_bound_ms", 0.0) / total >= HOST_BOUND_SHARE:
        spread = d.get("host_speed_range_ms")
        how = (f": {spread[0]:,.2f} ms on a fast host, {spread[1]:,.2f} ms on a slow one (the 10th and 90th percentiles "
               "of the H200 machines measured)" if spread else
               "; on real H200 machines such steps varied by tens of percent between machines")
        lines.append(_row("", "host-bound: the host's CPU sets part of this step" + how))
    if len(ranks) > 1:
        for r in ranks[:_SHOWN_RANKS]:
            label = f"rank {r['rank']}" + (f" (x{r['members']})" if r["members"] > 1 else "")
            lines.append(_row("", f"{label}: {r['total_ms']:,.2f} ms; {_buckets(r, r['total_ms'])}"))
        if len(ranks) > _SHOWN_RANKS:
            lines.append(_row("", f"... and {len(ranks) - _SHOWN_RANKS} more representative ranks (see the JSON)"))
    return lines


_BUCKETS = {"compute_ms": "compute", "exposed_comm_ms": "exposed comm", "host_bound_ms": "host-bound",
            "idle_ms": "idle/bubble"}


def _buckets(b: dict, total_ms: float) -> str:
    names = _BUCKETS.items()
    return ", ".join(f"{label} {b[key]:,.2f} ms ({b[key] / total_ms if total_ms else 0.0:.0%})" for key, label in names)


def _size(size_bytes: int) -> str:
    return f"{size_bytes / _GIB:,.2f} GiB" if size_bytes >= _GIB else f"{size_bytes / _MIB:,.1f} MiB"


def _flops(flops: float) -> str:
    return f"{flops / 1e12:,.2f} TFLOP" if flops >= 1e12 else f"{flops / 1e9:,.2f} GFLOP"
