"""NCCL's own choice of protocol and channel count for a call inside one NVLink domain.

NCCL prices every (algorithm, protocol) pair with its tuning model and runs the cheapest
(src/graph/tuning.cc `ncclTopoTuneModel` fills the table, `ncclTopoGetAlgoTime` prices a size,
src/enqueue.cc `topoGetAlgoInfo` takes the minimum and then picks the channel count). This module
re-derives that choice from NCCL 2.28.9's constants so that Maya's measured cost curves are applied
to the protocol NCCL actually runs, which is not always the fastest one: on 2 H200s a forced LL128
all_reduce beats Simple from 2 to 6 MiB, but NCCL's model never picks LL128 there.

For the ring algorithm on one node NCCL's estimate of protocol p is (tuning.cc)
    t_p = base_p + k * hop_p + S / algbw_p,   algbw_p = busbw_p * n / steps,
    steps = 2(n-1) for all_reduce, n-1 for all_gather / reduce_scatter, n for broadcast / reduce;
    k = steps, except 1 for broadcast / reduce when the ring graph keeps the same channels;
    busbw_Simple = C * b, busbw_LL128 = min(0.92 C b, C * 36.7 GB/s), busbw_LL = min(141 GB/s, C b / 2),
with C channels of b GB/s from NCCL's ring graph search (`NcclGraph`), S the call's bytes
(`ncclFuncMaxSendRecvCount`: the all_gather output, the reduce_scatter input), and the Hopper,
one-node constants below. Point-to-point calls (send/recv, all_to_all) skip the model: each peer's
transfer uses LL up to 16 KiB per p2p channel, else Simple (enqueue.cc `addP2pToPlan`).

Checked against NCCL's log: benchmarks/gpu/nccl_algo_probe.py on 2 H200s recorded NCCL's choice for
81 calls from 1 KiB to 1 GiB (benchmarks/gpu/multi_gpu_h200x2/nccl_algo_h200x2.json); this model picks
the same protocol for every one. NCCL also weighs its tree algorithm for all_reduce; on one node it
never wins on 2 GPUs (the same log) and this module does not model it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from maya.estimator.collective_op import CollectiveOp


class Protocol(str, enum.Enum):
    """NCCL's wire protocols (src/include/device.h NCCL_PROTO_*)."""

    LL = "LL"
    """8-byte stores of 4 data bytes and a 4-byte flag: lowest latency, half the bandwidth."""
    LL128 = "LL128"
    """128-byte lines of 120 data bytes and an 8-byte flag."""
    SIMPLE = "Simple"
    """Bulk copies with a fence and a flag per step: full bandwidth, highest latency."""


# NCCL 2.28.9 src/graph/tuning.cc `ncclTunerConstantsDefaults`, ring algorithm, Hopper, one node.
_BASE_LATENCY_US = {Protocol.LL: 6.6, Protocol.LL128: 14.0, Protocol.SIMPLE: 8.4}  # baseLatencies[RING]
_NVLINK_HOP_LATENCY_US = {Protocol.LL: 0.6, Protocol.LL128: 1.9, Protocol.SIMPLE: 3.4}  # hwLatencies[NVLINK][RING]
_LL_MAX_BUS_GBPS = 141.0  # llMaxBws[Hopper][one node]
_LL128_MAX_CHANNEL_GBPS = 36.7  # perChMaxRingLL128Bws[Hopper]
_LL128_BUS_FRACTION = 0.92  # "120.0/128.0" in ncclTopoTuneModel
_LL_BUS_FRACTION = 0.5
# src/include/device.h and comm.h: threads per channel and bytes per thread before NCCL adds a channel.
_LL_THREADS = 512  # NCCL_LL_MAX_NTHREADS
_LL_THREAD_THRESHOLD_BYTES = 8  # NCCL_LL_THREAD_THRESHOLD, times nRanks for the ring
_P2P_LL_THRESHOLD_BYTES = 16384  # NCCL_P2P_LL_THRESHOLD, per p2p channel

RING_OPS = frozenset({CollectiveOp.ALL_REDUCE, CollectiveOp.ALL_GATHER, CollectiveOp.REDUCE_SCATTER,
                       CollectiveOp.BROADCAST, CollectiveOp.REDUCE, CollectiveOp.BARRIER})
"""Collectives NCCL runs over its ring inside a node (the others take the point-to-point path)."""
_P2P_OPS = frozenset({CollectiveOp.SEND, CollectiveOp.RECV, CollectiveOp.ALL_TO_ALL})


@dataclass(frozen=True, kw_only=True, slots=True)
class NcclGraph:
    """What NCCL's topology search found inside one NVLink domain, as its NCCL_DEBUG=INFO log prints it."""

    ring_channels: int
    """Channels of the ring graph ("Pattern 4, ..., nChannels 12" on 2 H200s)."""
    ring_channel_bandwidth_GBps: float
    """Bandwidth the search gave each ring channel ("bw 30.000000/..."), GB/s."""
    ring_same_channels: bool
    """Whether the ring graph reuses one ring for all channels ("sameChannels 1")."""
    coll_channels: int
    """Channels a collective may use after NCCL duplicates the graph ("24 coll channels")."""
    p2p_channels_per_peer: int
    """Channels a point-to-point transfer may use ("32 p2p channels per peer")."""

    def __post_init__(self) -> None:
        for name in ("ring_channels", "coll_channels", "p2p_channels_per_peer"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)} must be >= 1")
        if self.ring_channel_bandwidth_GBps <= 0:
            raise ValueError(f"ring_channel_bandwidth_GBps={self.ring_channel_bandwidth_GBps} must be > 0")


def ring_steps(op: CollectiveOp, n: int) -> int:
    """Steps of NCCL's ring for op on n ranks (`nsteps` in ncclTopoTuneModel)."""
    if op in (CollectiveOp.ALL_REDUCE, CollectiveOp.BARRIER):
        return 2 * (n - 1)
    if op in (CollectiveOp.ALL_GATHER, CollectiveOp.REDUCE_SCATTER):
        return n - 1
    return n


def nccl_ring_estimate_us(op: CollectiveOp, protocol: Protocol, message_bytes: int, n: int, graph: NcclGraph) -> float:
    """NCCL's own estimate of a ring call inside one NVLink domain, microseconds (module docstring)."""
    bus_GBps = graph.ring_channels * graph.ring_channel_bandwidth_GBps
    if protocol is Protocol.LL:
        bus_GBps = min(_LL_MAX_BUS_GBPS, bus_GBps * _LL_BUS_FRACTION)
    elif protocol is Protocol.LL128:
        bus_GBps = min(bus_GBps * _LL128_BUS_FRACTION, graph.ring_channels * _LL128_MAX_CHANNEL_GBPS)
    steps = ring_steps(op, n)
    hops = 1 if op in (CollectiveOp.BROADCAST, CollectiveOp.REDUCE) and graph.ring_same_channels else steps
    latency_us = _BASE_LATENCY_US[protocol] + hops * _NVLINK_HOP_LATENCY_US[protocol]
    algbw_bytes_per_us = bus_GBps * n / steps * 1e3
    return latency_us + message_bytes / algbw_bytes_per_us


def nccl_protocol(op: CollectiveOp, message_bytes: int, n: int, graph: NcclGraph) -> Protocol:
    """The protocol NCCL runs for an n-rank call of `message_bytes` (nccl-tests' size) in one NVLink domain.

    Ring collectives: the cheapest by `nccl_ring_estimate_us`. send/recv and all_to_all: LL when each
    peer's share fits in 16 KiB per p2p channel, else Simple.
    """
    if op in _P2P_OPS:
        peer_bytes = message_bytes / n if op is CollectiveOp.ALL_TO_ALL else message_bytes
        return Protocol.LL if peer_bytes <= graph.p2p_channels_per_peer * _P2P_LL_THRESHOLD_BYTES else Protocol.SIMPLE
    if op not in RING_OPS:
        raise ValueError(f"no NCCL protocol choice for {op.value}")
    return min(Protocol, key=lambda p: nccl_ring_estimate_us(op, p, message_bytes, n, graph))


def ll_ring_channels(message_bytes: int, n: int, graph: NcclGraph) -> float:
    """Channels NCCL gives an LL ring call: as many as get 512 threads x 8n bytes each, 1 to all.

    src/enqueue.cc `topoGetAlgoInfo` ("Ring/Tree channel tuning") drops channels while each would get
    less than that: 1 channel up to 16 KiB on 2 ranks, 8 at 64 KiB, all 24 from 192 KiB. NCCL takes
    the whole number; this is the continuous count, so that a call's time never drops as it grows.
    """
    per_channel_bytes = _LL_THREADS * _LL_THREAD_THRESHOLD_BYTES * n
    return min(max(message_bytes / per_channel_bytes, 1.0), float(graph.coll_channels))
