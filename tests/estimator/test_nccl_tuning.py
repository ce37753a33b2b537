"""NCCL's tuning model: hand-computed switch points, and NCCL's own log on 2 H200s (NCCL 2.28.9)."""

import json
import re
from pathlib import Path

import pytest

from maya.estimator.collective_op import CollectiveOp
from maya.estimator.nccl_tuning import NcclGraph, Protocol, ll_ring_channels, nccl_protocol, nccl_ring_estimate_us

MIB = 1 << 20
PROBE = json.loads((Path(__file__).parents[2] / "benchmarks/gpu/multi_gpu_h200x2/nccl_algo_h200x2.json").read_text())
# What NCCL logged on 2 H200s: "Pattern 4, ..., nChannels 12, bw 30/30, ... sameChannels 1", "24 coll channels".
H200 = NcclGraph(ring_channels=12, ring_channel_bandwidth_GBps=30.0, ring_same_channels=True, coll_channels=24,
                 p2p_channels_per_peer=32)
LOGGED_OPS = {"AllReduce": CollectiveOp.ALL_REDUCE, "AllGather": CollectiveOp.ALL_GATHER,
              "ReduceScatter": CollectiveOp.REDUCE_SCATTER, "Broadcast": CollectiveOp.BROADCAST}


def test_two_rank_all_reduce_switches_from_ll_to_simple_where_its_estimates_cross():
    # Ring, 2 ranks, 2 steps: LL 6.6 + 2 * 0.6 us at min(141, 360 / 2) GB/s; Simple 8.4 + 2 * 3.4 us at 360 GB/s.
    assert nccl_ring_estimate_us(CollectiveOp.ALL_REDUCE, Protocol.LL, 0, 2, H200) == pytest.approx(7.8)
    assert nccl_ring_estimate_us(CollectiveOp.ALL_REDUCE, Protocol.SIMPLE, 360_000, 2, H200) == pytest.approx(16.2)
    crossing_bytes = (15.2 - 7.8) / (1 / 141e3 - 1 / 360e3)
    assert crossing_bytes == pytest.approx(1.715e6, rel=1e-3)  # between the 1.5 and 2 MiB that NCCL logged
    assert nccl_protocol(CollectiveOp.ALL_REDUCE, int(crossing_bytes) - 1, 2, H200) is Protocol.LL
    assert nccl_protocol(CollectiveOp.ALL_REDUCE, int(crossing_bytes) + 1, 2, H200) is Protocol.SIMPLE


def test_four_rank_all_reduce_runs_ll128_between_ll_and_simple():
    # 6 steps, algbw = busbw * 4 / 6: LL 10.2 us at 94 GB/s, LL128 25.4 us at 220.8, Simple 28.8 us at 240.
    at_4_mib = {p: nccl_ring_estimate_us(CollectiveOp.ALL_REDUCE, p, 4 * MIB, 4, H200) for p in Protocol}
    assert at_4_mib[Protocol.LL] == pytest.approx(10.2 + 4 * MIB / 94e3)
    assert at_4_mib[Protocol.LL128] == pytest.approx(25.4 + 4 * MIB / 220.8e3)
    assert at_4_mib[Protocol.SIMPLE] == pytest.approx(28.8 + 4 * MIB / 240e3)
    assert [nccl_protocol(CollectiveOp.ALL_REDUCE, s, 4, H200) for s in (MIB, 4 * MIB, 16 * MIB)] == [
        Protocol.LL, Protocol.LL128, Protocol.SIMPLE]
    # all_gather's LL128 has the higher latency and the lower bandwidth of the two: never picked.
    assert {nccl_protocol(CollectiveOp.ALL_GATHER, s, 4, H200) for s in range(0, 64 * MIB, MIB // 8)} == {
        Protocol.LL, Protocol.SIMPLE}


def test_point_to_point_uses_ll_up_to_16_kib_per_channel():
    assert nccl_protocol(CollectiveOp.SEND, 32 * 16384, 2, H200) is Protocol.LL
    assert nccl_protocol(CollectiveOp.RECV, 32 * 16384 + 1, 2, H200) is Protocol.SIMPLE
    # all_to_all: each of the 4 peers gets a quarter.
    assert nccl_protocol(CollectiveOp.ALL_TO_ALL, 2 * MIB, 4, H200) is Protocol.LL
    assert nccl_protocol(CollectiveOp.ALL_TO_ALL, 2 * MIB + 4, 4, H200) is Protocol.SIMPLE


def test_estimates_reproduce_the_ring_table_nccl_logged():
    """NCCL printed latency/algbw per protocol for each op (NCCL_DEBUG_SUBSYS=TUNING); ring is columns 3-5."""
    table = {}
    for line in PROBE["tuning_log"]:
        row = re.match(r"\s*(\w+) \|(.*)", line)
        if row and row[1] in LOGGED_OPS and row[1] not in table:  # the first block holds Tree, Ring, CollNetDirect
            table[row[1]] = [tuple(map(float, cell.split("/"))) for cell in row[2].strip(" |").split("|")]
    assert set(table) == set(LOGGED_OPS)
    for name, op in LOGGED_OPS.items():
        for protocol, (latency_us, algbw_GBps) in zip(Protocol, table[name][3:6]):
            assert nccl_ring_estimate_us(op, protocol, 0, 2, H200) == pytest.approx(latency_us, abs=0.05)
            per_gb_us = nccl_ring_estimate_us(op, protocol, 10**9, 2, H200) - latency_us
            assert 1e6 / per_gb_us == pytest.approx(algbw_GBps, abs=0.05)


def test_protocol_matches_every_call_nccl_logged():
    assert len(PROBE["choices"]) == 81
    for choice in PROBE["choices"]:
        op = LOGGED_OPS[choice["op"]]
        # NCCL logs an all_gather's or reduce_scatter's per-rank bytes; the model takes the whole buffer.
        size = choice["size_bytes"] * (2 if op in (CollectiveOp.ALL_GATHER, CollectiveOp.REDUCE_SCATTER) else 1)
        assert nccl_protocol(op, size, 2, H200).value.upper() == choice["protocol"], choice


def test_ll_channels_follow_the_logged_counts_below_all_channels():
    logged = {(c["op"], c["size_bytes"]): c["channels"] for c in PROBE["choices"] if c["protocol"] == "LL"}
    for size, channels in ((1024, 1), (4096, 1), (16384, 2), (65536, 8)):
        assert logged[("AllReduce", size)] == channels
        assert int(ll_ring_channels(size, 2, H200)) == channels
    # NCCL then spreads 256 KiB over 22 of its 24 channels (it splits work in 16 KiB cells); the model takes all.
    assert logged[("AllReduce", 262144)] == 22 and ll_ring_channels(262144, 2, H200) == 24
    assert ll_ring_channels(MIB, 4, H200) == 24
