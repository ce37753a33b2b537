"""Simulator speed on one iteration of a 1,024-GPU Llama-70B-class job (TP 8, PP 8, DP 16).

Synthesizes the 64 representative traces (one data-parallel replica; the other 15 replicas share
them through rank classes): 1F1B with 32 micro-batches over 8 stages of 10 layers, Megatron-style
TP all_reduces and batched PP send/recv on the compute stream, and per-layer DP reduce_scatters on a
side stream overlapping the last backward, then all_gathers. About 20k rows per rank.

Run:  .venv/bin/python benchmarks/simulator_speed.py [--micro-batches 32] [--profile]
Target: simulate() takes <= 10 s on one core.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import numpy as np
import pyarrow as pa

from maya.hardware.cluster import load_cluster
from maya.simulator import simulate

TP, PP, DP = 8, 8, 16
LAYERS_PER_STAGE = 10
FWD_KERNELS, BWD_KERNELS = 18, 36  # per layer, besides the two TP all_reduces each way
ACTIVATION_BYTES = 4096 * 8192 * 2  # seq 4096 x hidden 8192 in bf16
LAYER_GRAD_BYTES = 70_000_000_000 // 80 // TP * 2  # one layer's bf16 gradients on one TP rank


def rank_of(dp: int, pp: int, tp: int) -> int:
    """Global rank with TP innermost, then PP, then DP (Megatron order)."""
    return dp * TP * PP + pp * TP + tp


class StageTrace:
    """Appends rows of one rank's trace as column lists."""

    def __init__(self, pp: int, tp: int, rng: np.random.Generator) -> None:
        self.pp, self.tp, self.rng = pp, tp, rng
        self.rank = rank_of(0, pp, tp)
        self.cols: dict[str, list] = {k: [] for k in (
            "kind", "op", "module", "stream", "event_id", "duration_us", "group_name", "group_ranks",
            "group_seq", "message_bytes", "peer")}
        self.group_seq: dict[str, int] = {}
        self.tp_group = [rank_of(0, pp, t) for t in range(TP)]
        self.pp_group = [rank_of(0, p, tp) for p in range(PP)]
        self.dp_group = [rank_of(d, pp, tp) for d in range(DP)]

    def row(self, kind, op, module="", stream=0, event_id=-1, duration_us=0.0, group=None, ranks=None,
            message_bytes=None, peer=None) -> None:
        c = self.cols
        c["kind"].append(kind); c["op"].append(op); c["module"].append(module); c["stream"].append(stream)
        c["event_id"].append(event_id); c["duration_us"].append(duration_us); c["group_name"].append(group)
        c["group_ranks"].append(ranks); c["message_bytes"].append(message_bytes); c["peer"].append(peer)
        seq = None
        if group is not None and peer is None:
            seq = self.group_seq.get(group, 0)
            self.group_seq[group] = seq + 1
        c["group_seq"].append(seq)

    def layer(self, layer: int, backward: bool) -> None:
        module = f"layers.{self.pp * LAYERS_PER_STAGE + layer}"
        count, base_us = (BWD_KERNELS, 40.0) if backward else (FWD_KERNELS, 35.0)
        durations = base_us * self.rng.uniform(0.2, 1.8, size=count)
        for i, d in enumerate(durations):
            self.row("kernel", "aten::mm" if i % 3 == 0 else "aten::add.Tensor", module, duration_us=float(d))
            if i in (count // 2, count - 1):
                self.row("collective", "nccl:all_reduce", module, group=f"tp{self.pp}", ranks=self.tp_group,
                         message_bytes=ACTIVATION_BYTES)

    def p2p(self, sends: list[int], recvs: list[int]) -> None:
        for peer in sends:
            self.row("collective", "nccl:send", group=f"pp{self.tp}", ranks=self.pp_group,
                     message_bytes=ACTIVATION_BYTES, peer=peer)
        for peer in recvs:
            self.row("collective", "nccl:recv", group=f"pp{self.tp}", ranks=self.pp_group,
                     message_bytes=ACTIVATION_BYTES, peer=peer)

    def table(self) -> pa.Table:
        n = len(self.cols["kind"])
        return pa.table({"seq": np.arange(n), **self.cols})


def stage_trace(pp: int, tp: int, micro_batches: int, seed: int) -> pa.Table:
    """One iteration of Megatron's 1F1B schedule on pipeline stage `pp`."""
    t = StageTrace(pp, tp, np.random.default_rng(seed))
    prev_rank = rank_of(0, pp - 1, tp) if pp > 0 else None
    next_rank = rank_of(0, pp + 1, tp) if pp < PP - 1 else None
    as_list = lambda r: [] if r is None else [r]  # noqa: E731
    last_backward = False

    def forward() -> None:
        for layer in range(LAYERS_PER_STAGE):
            t.layer(layer, backward=False)

    def backward() -> None:
        for layer in reversed(range(LAYERS_PER_STAGE)):
            t.layer(layer, backward=True)
            if last_backward:  # DDP-style: reduce_scatter this layer's gradients on stream 1
                event = 1000 + layer
                t.row("event_record", "cuda:event_record", stream=0, event_id=event)
                t.row("stream_wait", "cuda:stream_wait_event", stream=1, event_id=event)
                t.row("collective", "nccl:reduce_scatter", f"layers.{pp * LAYERS_PER_STAGE + layer}", stream=1,
                      group=f"dp{t.rank}", ranks=t.dp_group, message_bytes=LAYER_GRAD_BYTES)

    warmup = min(PP - pp - 1, micro_batches)
    for _ in range(warmup):
        t.p2p([], as_list(prev_rank))
        forward()
        t.p2p(as_list(next_rank), [])
    if micro_batches > warmup:
        t.p2p([], as_list(prev_rank))
    steady = micro_batches - warmup
    for i in range(steady):
        forward()
        t.p2p(as_list(next_rank), as_list(next_rank))  # send_forward_recv_backward
        last_backward = warmup == 0 and i == steady - 1
        backward()
        if i == steady - 1:
            t.p2p(as_list(prev_rank), [])
        else:
            t.p2p(as_list(prev_rank), as_list(prev_rank))  # send_backward_recv_forward
    for i in range(warmup):
        t.p2p([], as_list(next_rank))
        last_backward = i == warmup - 1
        backward()
        t.p2p(as_list(prev_rank), [])
    t.row("event_record", "cuda:event_record", stream=1, event_id=2000)
    t.row("stream_wait", "cuda:stream_wait_event", stream=0, event_id=2000)
    for layer in range(LAYERS_PER_STAGE):
        t.row("kernel", "aten::_foreach_add_.List", "optimizer", duration_us=30.0)
        t.row("collective", "nccl:all_gather", f"layers.{pp * LAYERS_PER_STAGE + layer}", group=f"dp{t.rank}",
              ranks=t.dp_group, message_bytes=LAYER_GRAD_BYTES)
    t.row("iteration_end", "maya:iteration_end")
    return t.table()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--micro-batches", type=int, default=32)
    parser.add_argument("--profile", action="store_true", help="print the top functions by cumulative time")
    args = parser.parse_args()

    start = time.perf_counter()
    traces = {rank_of(0, pp, tp): stage_trace(pp, tp, args.micro_batches, seed=pp) for pp in range(PP) for tp in range(TP)}
    mapping = {rank_of(d, p, t): rank_of(0, p, t) for d in range(DP) for p in range(PP) for t in range(TP)}
    rows = sum(t.num_rows for t in traces.values())
    print(f"synthesized {len(traces)} representative traces, {rows} rows "
          f"({rows // len(traces)} per rank) in {time.perf_counter() - start:.1f} s")
    cluster = load_cluster("dgx-h200", nodes=TP * PP * DP // 8)

    profiler = cProfile.Profile() if args.profile else None
    start, cpu_start = time.perf_counter(), time.process_time()
    if profiler:
        profiler.enable()
    result = simulate(traces, cluster, rank_to_representative=mapping)
    if profiler:
        profiler.disable()
    elapsed, cpu_s = time.perf_counter() - start, time.process_time() - cpu_start
    slowest = result.breakdown[result.slowest_rank]
    print(f"simulate(): {elapsed:.2f} s wall, {cpu_s:.2f} s CPU for world_size={result.world_size} ({rows / elapsed / 1e3:.0f}k rows/s), "
          f"{result.events_handled} heap events")
    print(f"iteration time {result.iteration_times_us[0] / 1e3:.1f} ms; slowest rank {slowest.rank}: "
          f"compute {slowest.compute_us / 1e3:.1f} ms, exposed comm {slowest.exposed_comm_us / 1e3:.1f} ms, "
          f"idle {slowest.idle_us / 1e3:.1f} ms, host-bound {slowest.host_bound_us / 1e3:.1f} ms")
    print(f"target <= 10 s on one core: {'met' if min(elapsed, cpu_s) <= 10 else 'MISSED'} "
          "(CPU time is the fairer number on a shared machine)")
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(20)


if __name__ == "__main__":
    main()
