"""NCCL collective cost model: alpha-beta ring and tree algorithms over NVLink and NICs.

Every cost function is pure: (op, message size, group ranks, cluster, params) -> microseconds.

Conventions follow nccl-tests' PERFORMANCE.md (https://github.com/NVIDIA/nccl-tests/blob/master/doc/
PERFORMANCE.md): `message_bytes` is nccl-tests' "size" (the full buffer: the all_gather output, the
reduce_scatter input, the all_reduce buffer), algbw = size / time and busbw = algbw * factor, where
the factor is 2(n-1)/n for all_reduce, (n-1)/n for all_gather, reduce_scatter and all_to_all, and 1
for broadcast, reduce and send/recv. busbw is what a link must carry, so a ring takes
time = factor * size / link_bandwidth + latency terms.

Topology: a group inside one NVLink domain runs at the NVLink bandwidth. A group spanning domains is
hierarchical and limited by the inter-node link: NCCL builds one ring (channel) per NIC, each ring
crosses every node boundary once, so the ring's bus bandwidth is
min(NVLink, min(k, nics_per_domain) * NIC), where k is how many of the group's ranks share a domain
(a data-parallel group with one rank per node uses a single rail's NIC).

All defaults in `CollectiveModelParams` are datasheet values, uncalibrated until measured with
nccl-tests on the target cluster. Inside one NVLink domain a calibrated GPU (`calibrated_params`)
uses per-op fits instead (`NvlinkFit`): the protocol NCCL's tuning model picks (nccl_tuning.py)
with a latency and a bandwidth per protocol fitted to measured NCCL times.
"""

from __future__ import annotations

import enum
import functools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from maya.estimator.collective_op import P2P_OPS, CollectiveOp
from maya.estimator.nccl_tuning import RING_OPS, NcclGraph, Protocol, ll_ring_channels, nccl_protocol
from maya.hardware.cluster import ClusterSpec


class Algorithm(str, enum.Enum):
    """How NCCL moves the data."""

    RING = "ring"
    TREE = "tree"
    DIRECT = "direct"
    """Point-to-point transfers all posted at once (send/recv, all_to_all)."""


# torch.distributed and c10d spellings of the same NCCL calls.
_ALIASES = {
    "allreduce": CollectiveOp.ALL_REDUCE,
    "all_reduce_coalesced": CollectiveOp.ALL_REDUCE,
    "allreduce_coalesced": CollectiveOp.ALL_REDUCE,
    "allgather": CollectiveOp.ALL_GATHER,
    "all_gather_into_tensor": CollectiveOp.ALL_GATHER,
    "_allgather_base": CollectiveOp.ALL_GATHER,
    "allgather_into_tensor_coalesced": CollectiveOp.ALL_GATHER,
    "all_gather_into_tensor_coalesced": CollectiveOp.ALL_GATHER,
    "reducescatter": CollectiveOp.REDUCE_SCATTER,
    "reduce_scatter_tensor": CollectiveOp.REDUCE_SCATTER,
    "_reduce_scatter_base": CollectiveOp.REDUCE_SCATTER,
    "reduce_scatter_tensor_coalesced": CollectiveOp.REDUCE_SCATTER,
    "alltoall": CollectiveOp.ALL_TO_ALL,
    "alltoall_base": CollectiveOp.ALL_TO_ALL,
    "all_to_all_single": CollectiveOp.ALL_TO_ALL,
    # NCCL has no gather/scatter: ProcessGroupNCCL posts n-1 sends to (or receives from) the root,
    # whose link then carries (n-1)/n of the total like an all_gather ring does.
    "gather": CollectiveOp.ALL_GATHER,
    "scatter": CollectiveOp.ALL_GATHER,
    "isend": CollectiveOp.SEND,
    "irecv": CollectiveOp.RECV,
}

def canonical_op(name: str) -> CollectiveOp:
    """Map a trace op name (`nccl:all_reduce`, `all_gather_into_tensor`, `isend`) to a `CollectiveOp`.

    Raises:
        ValueError: the name is not a known NCCL operation.
    """
    bare = name.split(":", 1)[1] if name.startswith("nccl:") else name
    try:
        return CollectiveOp(bare)
    except ValueError:
        pass
    if bare in _ALIASES:
        return _ALIASES[bare]
    known = sorted({op.value for op in CollectiveOp} | set(_ALIASES))
    raise ValueError(f"unknown collective {name!r}; known: {', '.join(known)}")


@dataclass(frozen=True, kw_only=True, slots=True)
class CollectiveModelParams:
    """Calibration of the NCCL model. Defaults: datasheet bandwidths, uncalibrated until measured."""

    nvlink_efficiency: float = 1.0
    """Fraction of the datasheet NVLink bandwidth that NCCL reaches (uncalibrated: 1.0)."""
    nic_efficiency: float = 1.0
    """Fraction of the datasheet NIC bandwidth that NCCL reaches (uncalibrated: 1.0)."""
    tree_efficiency: float = 1.0
    """Bandwidth of the tree algorithm relative to the ring's (uncalibrated: 1.0)."""
    ring_base_latency_us: float = 6.0
    """Fixed cost of one ring collective (launch, protocol setup), microseconds; uncalibrated."""
    tree_base_latency_us: float = 6.0
    """Fixed cost of one tree all_reduce, microseconds; uncalibrated."""
    p2p_base_latency_us: float = 3.0
    """Fixed cost of one send/recv or all_to_all, microseconds; uncalibrated."""
    nvlink_fits: tuple[NvlinkFit, ...] = ()
    """Per-op fits to measured NCCL times inside one NVLink domain (`calibrated_params`); they replace
    the datasheet model there. Empty: uncalibrated."""
    nccl_graph: NcclGraph | None = None
    """NCCL's ring graph inside the NVLink domain, which decides the protocol `nvlink_fits` are priced
    with; required with them."""

    def __post_init__(self) -> None:
        if self.nvlink_fits and self.nccl_graph is None:
            raise ValueError(f"{len(self.nvlink_fits)} nvlink_fits given without the nccl_graph that picks their protocol")
        for name in ("nvlink_efficiency", "nic_efficiency", "tree_efficiency"):
            value = getattr(self, name)
            if not 0 < value <= 1:
                raise ValueError(f"{name}={value} must be in (0, 1]")
        for name in ("ring_base_latency_us", "tree_base_latency_us", "p2p_base_latency_us"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}={getattr(self, name)} must be >= 0")


@dataclass(frozen=True, kw_only=True, slots=True)
class NvlinkFit:
    """One op's NCCL time inside an NVLink domain, fitted to measurements (benchmarks/collective_model.py).

    NCCL runs each call with the protocol its own tuning model picks (`nccl_protocol`), and the call
    takes that protocol's time, with S the message (nccl-tests' size), factor = busbw/algbw,
    B = the datasheet NVLink bandwidth and S' = S clamped to [1 MiB, 1 GiB]:
      Simple: latency_us + factor * S / (B * efficiency) * (1 + log_slope * ln(1 GiB / S'))
      LL128:  the same as Simple. NCCL picks it between LL and Simple only for all_reduce from 4
              ranks (2.4-8.9 MiB on 4) and all_gather / reduce_scatter from 8, a window the measured
              sizes cannot fit apart; forced on 2 H200s, an LL128 all_reduce took 0.90-1.09x the
              Simple time from 2 to 32 MiB (benchmarks/gpu/multi_gpu_h200x2/nccl_h200x2_proto_*.json).
      LL:     ll_latency_us + factor * S / (B * ll_efficiency) * C / c(S)
    where c(S) of C channels is what NCCL gives a small LL call (`ll_ring_channels`; C for send/recv and
    all_to_all). log_slope is the extra data time per e-fold below 1 GiB: a smaller message fills
    fewer chunks per channel to overlap the ring's steps (and a p2p call fewer channels), so it
    reaches less of the link.
    """

    op: str
    """CollectiveOp value."""
    latency_us: float
    """Fixed cost per call with the Simple protocol, microseconds."""
    efficiency: float
    """Share of the datasheet NVLink bandwidth the Simple protocol reaches at 1 GiB."""
    log_slope: float
    """Extra Simple data time per e-fold below 1 GiB, as a fraction (>= 0)."""
    ll_latency_us: float
    """Fixed cost per call with the LL protocol, microseconds."""
    ll_efficiency: float
    """Share of the datasheet NVLink bandwidth the LL protocol reaches on all channels."""
    ranks: int
    """Group size the fit was measured at; other group sizes inside the domain use the nearest one."""


_FIT_MIN_BYTES, _FIT_MAX_BYTES = 1 << 20, 1 << 30


def nvlink_fit_duration_us(
    fit: NvlinkFit, op: CollectiveOp, message_bytes: int, n: int, nvlink_bytes_per_s: float, graph: NcclGraph
) -> float:
    """`NvlinkFit`'s formula for an n-rank group inside one NVLink domain, microseconds."""
    factor = 1.0 if op in P2P_OPS else bus_bandwidth_factor(op, n)
    data_us = factor * message_bytes / nvlink_bytes_per_s * 1e6
    protocol = nccl_protocol(op, message_bytes, n, graph)
    if protocol is Protocol.LL:
        # A small ring call runs on fewer channels, each no faster: its data time grows by C / c(S).
        channel_share = graph.coll_channels / ll_ring_channels(message_bytes, n, graph) if op in RING_OPS else 1.0
        return fit.ll_latency_us + data_us / fit.ll_efficiency * channel_share
    clamped = min(max(message_bytes, _FIT_MIN_BYTES), _FIT_MAX_BYTES)
    return fit.latency_us + data_us / fit.efficiency * (1 + fit.log_slope * math.log(_FIT_MAX_BYTES / clamped))


DEFAULT_PARAMS = CollectiveModelParams()
"""Datasheet-only parameters, used when no calibration is given."""


def bus_bandwidth_factor(op: CollectiveOp | str, n: int) -> float:
    """busbw / algbw for an n-rank group, from nccl-tests' PERFORMANCE.md.

    all_reduce: 2(n-1)/n; all_gather, reduce_scatter, all_to_all: (n-1)/n; broadcast, reduce,
    send/recv: 1.
    """
    op = canonical_op(op) if isinstance(op, str) else op
    if op in (CollectiveOp.ALL_REDUCE, CollectiveOp.BARRIER):
        return 2 * (n - 1) / n
    if op in (CollectiveOp.ALL_GATHER, CollectiveOp.REDUCE_SCATTER, CollectiveOp.ALL_TO_ALL):
        return (n - 1) / n
    return 1.0


def bus_bandwidth_bytes_per_s(op: CollectiveOp | str, message_bytes: int, n: int, duration_us: float) -> float:
    """nccl-tests' busbw: (message_bytes / duration) * bus_bandwidth_factor(op, n), bytes per second."""
    return message_bytes / (duration_us * 1e-6) * bus_bandwidth_factor(op, n)


@dataclass(frozen=True, kw_only=True, slots=True)
class GroupLinks:
    """What a group of ranks sees of the cluster: its bottleneck bandwidth and per-hop latency."""

    n: int
    """Ranks in the group."""
    domains: int
    """NVLink domains the group spans."""
    ranks_per_domain: int
    """Largest number of the group's ranks inside one NVLink domain."""
    ring_bandwidth_bytes_per_s: float
    """Bus bandwidth of a ring over the group, bytes per second (per direction)."""
    nvlink_bandwidth_bytes_per_s: float
    """Effective NVLink bandwidth per GPU, bytes per second."""
    nic_bandwidth_bytes_per_s: float
    """Effective bandwidth of one NIC, bytes per second."""
    nics_used: int
    """NICs per domain that the group's rings use: min(ranks_per_domain, NICs in the domain)."""
    step_latency_us: float
    """Latency of one ring step: the NVLink hop inside a domain, the NIC hop across domains."""


def group_links(group_ranks: Sequence[int], cluster: ClusterSpec, params: CollectiveModelParams) -> GroupLinks:
    """Summarize the links a group of global ranks uses on `cluster` (hierarchical bottleneck)."""
    per_domain: dict[int, int] = {}
    for rank in group_ranks:
        domain = cluster.nvlink_domain_of(rank)
        per_domain[domain] = per_domain.get(domain, 0) + 1
    k = max(per_domain.values())
    nvlink = cluster.nvlink_bandwidth_bytes_per_s * params.nvlink_efficiency
    nic = cluster.nic_bandwidth_bytes_per_s * params.nic_efficiency
    nics_per_domain = max(1, cluster.nics_per_node * cluster.nvlink_domain_size // cluster.gpus_per_node)
    nics_used = min(k, nics_per_domain)
    spans = len(per_domain) > 1
    return GroupLinks(
        n=len(group_ranks),
        domains=len(per_domain),
        ranks_per_domain=k,
        ring_bandwidth_bytes_per_s=min(nvlink, nics_used * nic) if spans else nvlink,
        nvlink_bandwidth_bytes_per_s=nvlink,
        nic_bandwidth_bytes_per_s=nic,
        nics_used=nics_used,
        step_latency_us=cluster.nic_latency_us if spans else cluster.nvlink_latency_us,
    )


def ring_duration_us(op: CollectiveOp, message_bytes: int, links: GroupLinks, params: CollectiveModelParams) -> float:
    """Ring algorithm time, microseconds.

    t = base + steps * step_latency + factor * S / B, with factor = busbw/algbw (PERFORMANCE.md),
    steps = 2(n-1) for all_reduce, n-1 for all_gather, reduce_scatter, broadcast and reduce (a
    pipelined chain), B = the ring's bus bandwidth.
    """
    n = links.n
    steps = 2 * (n - 1) if op in (CollectiveOp.ALL_REDUCE, CollectiveOp.BARRIER) else n - 1
    data_us = bus_bandwidth_factor(op, n) * message_bytes / links.ring_bandwidth_bytes_per_s * 1e6
    return params.ring_base_latency_us + steps * links.step_latency_us + data_us


def tree_all_reduce_duration_us(
    message_bytes: int, links: GroupLinks, cluster: ClusterSpec, params: CollectiveModelParams
) -> float:
    """NCCL double-binary-tree all_reduce time, microseconds.

    t = base + 2 * ((k-1) * nvlink_latency + ceil(log2 d) * nic_latency) + 2 * S / (B * tree_eff):
    a reduce up an intra-domain chain of k ranks and a binary tree over d domains, then a broadcast
    down; NCCL's tuning model gives tree all_reduce algbw = busbw / 2 (src/graph/tuning.cc).
    """
    depth_latency_us = (links.ranks_per_domain - 1) * cluster.nvlink_latency_us + math.ceil(
        math.log2(links.domains)
    ) * cluster.nic_latency_us
    data_us = 2 * message_bytes / (links.ring_bandwidth_bytes_per_s * params.tree_efficiency) * 1e6
    return params.tree_base_latency_us + 2 * depth_latency_us + data_us


def all_to_all_duration_us(message_bytes: int, links: GroupLinks, params: CollectiveModelParams) -> float:
    """all_to_all time, microseconds: every rank posts n-1 sends of S/n at once.

    t = base + step_latency + max((k-1)/n * S / B_nvlink, (n-k)/n * S / (nics_used * B_nic / k)):
    the k ranks of a domain share its NICs for the (n-k)/n of their data that leaves the domain.
    """
    n, k = links.n, links.ranks_per_domain
    intra_us = (k - 1) / n * message_bytes / links.nvlink_bandwidth_bytes_per_s * 1e6
    inter_bw = links.nics_used * links.nic_bandwidth_bytes_per_s / k
    inter_us = (n - k) / n * message_bytes / inter_bw * 1e6
    return params.p2p_base_latency_us + links.step_latency_us + max(intra_us, inter_us)


def p2p_duration_us(message_bytes: int, src: int, dst: int, cluster: ClusterSpec, params: CollectiveModelParams) -> float:
    """send/recv time, microseconds: t = base + hop_latency + S / B over NVLink or one NIC."""
    if cluster.nvlink_domain_of(src) == cluster.nvlink_domain_of(dst):
        bandwidth, latency_us = cluster.nvlink_bandwidth_bytes_per_s * params.nvlink_efficiency, cluster.nvlink_latency_us
    else:
        bandwidth, latency_us = cluster.nic_bandwidth_bytes_per_s * params.nic_efficiency, cluster.nic_latency_us
    return params.p2p_base_latency_us + latency_us + message_bytes / bandwidth * 1e6


def collective_cost(
    op: CollectiveOp | str,
    message_bytes: int,
    group_ranks: Sequence[int],
    cluster: ClusterSpec,
    params: CollectiveModelParams = DEFAULT_PARAMS,
) -> tuple[Algorithm, float]:
    """The algorithm NCCL would pick and its time in microseconds.

    all_reduce takes the faster of ring and tree (NCCL's tuner does the same; tree is only
    considered when the group spans NVLink domains, as NCCL's tree is an inter-node algorithm).
    send/recv take `group_ranks` = (src, dst). A group of one rank costs nothing.

    Raises:
        ValueError: unknown op, negative size, empty group or a rank outside the cluster.
    """
    op = canonical_op(op) if isinstance(op, str) else op
    if message_bytes < 0:
        raise ValueError(f"{op.value}: message_bytes={message_bytes} must be >= 0")
    if not group_ranks:
        raise ValueError(f"{op.value}: empty group")
    if max(group_ranks) >= cluster.world_size:
        raise ValueError(
            f"{op.value}: rank {max(group_ranks)} is outside cluster {cluster.name!r} of "
            f"world_size={cluster.world_size}"
        )
    if op in P2P_OPS:
        if len(group_ranks) != 2:
            raise ValueError(f"{op.value}: group_ranks={list(group_ranks)} must be (src, dst)")
    elif len(group_ranks) == 1:
        return Algorithm.RING, 0.0
    n = 2 if op in P2P_OPS else len(group_ranks)
    fit = _fit_for(op, params, n)
    if fit is not None and len({cluster.nvlink_domain_of(r) for r in group_ranks}) == 1:
        algorithm = Algorithm.DIRECT if op in P2P_OPS or op is CollectiveOp.ALL_TO_ALL else Algorithm.RING
        duration_us = nvlink_fit_duration_us(fit, op, message_bytes, n, cluster.nvlink_bandwidth_bytes_per_s, params.nccl_graph)
        return algorithm, duration_us
    if op in P2P_OPS:
        return Algorithm.DIRECT, p2p_duration_us(message_bytes, group_ranks[0], group_ranks[1], cluster, params)
    links = group_links(group_ranks, cluster, params)
    if op is CollectiveOp.ALL_TO_ALL:
        return Algorithm.DIRECT, all_to_all_duration_us(message_bytes, links, params)
    ring_us = ring_duration_us(op, message_bytes, links, params)
    if op in (CollectiveOp.ALL_REDUCE, CollectiveOp.BARRIER) and links.domains > 1:
        tree_us = tree_all_reduce_duration_us(message_bytes, links, cluster, params)
        if tree_us < ring_us:
            return Algorithm.TREE, tree_us
    return Algorithm.RING, ring_us


def _fit_for(op: CollectiveOp, params: CollectiveModelParams, n: int) -> NvlinkFit | None:
    """The op's fit measured at the group size nearest to `n` (the larger on a tie)."""
    # send and recv are one measurement (a matched pair); barrier is a tiny all_reduce.
    key = {CollectiveOp.RECV: "send", CollectiveOp.BARRIER: "all_reduce", CollectiveOp.REDUCE: "broadcast"}.get(op, op.value)
    fits = [f for f in params.nvlink_fits if f.op == key]
    return min(fits, key=lambda f: (abs(f.ranks - n), -f.ranks)) if fits else None


@functools.cache
def _nccl_calibration(gpu: str) -> dict:
    """maya/estimator/data/<gpu>/nccl_fits.json (benchmarks/collective_model.py, overlap_report.py), or {}."""
    path = Path(__file__).parent / "data" / gpu / "nccl_fits.json"
    return json.loads(path.read_text()) if path.exists() else {}


def calibrated_params(gpu: str) -> CollectiveModelParams:
    """The NCCL model calibrated for `gpu`, else datasheet defaults."""
    calibration = _nccl_calibration(gpu)
    if not calibration.get("fits"):
        return DEFAULT_PARAMS
    return CollectiveModelParams(nvlink_fits=tuple(NvlinkFit(**f) for f in calibration["fits"]),
                                 nccl_graph=NcclGraph(**calibration["nccl_graph"]))


def calibrated_overlap_slowdown(gpu: str) -> float:
    """How much slower a kernel runs beside an NCCL kernel on `gpu`, as measured; 1.0 if never measured."""
    return float(_nccl_calibration(gpu).get("overlap_slowdown", 1.0))


def collective_duration_us(
    op: CollectiveOp | str,
    message_bytes: int,
    group_ranks: Sequence[int],
    cluster: ClusterSpec,
    params: CollectiveModelParams = DEFAULT_PARAMS,
) -> float:
    """Time of one NCCL call in microseconds; see `collective_cost` for the algorithm choice."""
    return collective_cost(op, message_bytes, group_ranks, cluster, params)[1]
