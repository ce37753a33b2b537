"""NCCL cost model: hand-computed ring, tree, all_to_all and send/recv times."""

import dataclasses
import math

import pytest

from maya.estimator.collective import (
    Algorithm,
    CollectiveModelParams,
    CollectiveOp,
    bus_bandwidth_bytes_per_s,
    bus_bandwidth_factor,
    canonical_op,
    collective_cost,
    collective_duration_us,
)
from maya.hardware.cluster import load_cluster

MIB = 1 << 20
PARAMS = CollectiveModelParams(ring_base_latency_us=6.0, tree_base_latency_us=6.0, p2p_base_latency_us=3.0)


@pytest.fixture
def two_nodes():
    return load_cluster("dgx-h200", nodes=2)  # NVLink 450 GB/s, 1 us; 8 NICs of 50 GB/s, 5 us


def test_four_rank_ring_all_reduce_over_nvlink(two_nodes):
    n, size, bandwidth = 4, MIB, 450e9
    expected_us = 6.0 + 2 * (n - 1) * 1.0 + 2 * (n - 1) / n * size / bandwidth * 1e6
    assert expected_us == pytest.approx(15.4953, abs=1e-4)
    algorithm, duration = collective_cost("nccl:all_reduce", size, [0, 1, 2, 3], two_nodes, PARAMS)
    assert algorithm is Algorithm.RING  # one node: NCCL's tree is not considered
    assert duration == pytest.approx(expected_us)


def test_all_gather_and_reduce_scatter_move_n_minus_1_over_n(two_nodes):
    n, size = 8, 64 * MIB
    expected_us = 6.0 + (n - 1) * 1.0 + (n - 1) / n * size / 450e9 * 1e6
    for op in ("all_gather_into_tensor", "reduce_scatter"):
        assert collective_duration_us(op, size, range(8), two_nodes, PARAMS) == pytest.approx(expected_us)


def test_broadcast_is_a_pipelined_chain(two_nodes):
    assert collective_duration_us("broadcast", MIB, [0, 1, 2], two_nodes, PARAMS) == pytest.approx(
        6.0 + 2 * 1.0 + MIB / 450e9 * 1e6
    )


def test_bus_bandwidth_matches_nccl_tests_convention(two_nodes):
    assert bus_bandwidth_factor(CollectiveOp.ALL_REDUCE, 8) == 2 * 7 / 8
    assert bus_bandwidth_factor("all_gather", 8) == 7 / 8
    assert bus_bandwidth_factor("send", 2) == 1.0
    # Without latency terms a ring's busbw is exactly the link bandwidth.
    free = CollectiveModelParams(ring_base_latency_us=0.0)
    zero_latency = dataclasses.replace(load_cluster("dgx-h200"), nvlink_latency_us=0.0)
    duration = collective_duration_us("all_reduce", 256 * MIB, range(8), zero_latency, free)
    assert bus_bandwidth_bytes_per_s("all_reduce", 256 * MIB, 8, duration) == pytest.approx(450e9)


def test_cross_node_ring_is_limited_by_the_nics(two_nodes):
    size, n = 1 << 30, 16
    # 8 ranks per node use all 8 NICs: min(450, 8 * 50) = 400 GB/s; steps pay the NIC latency.
    ring_us = 6.0 + 2 * (n - 1) * 5.0 + 2 * (n - 1) / n * size / 400e9 * 1e6
    tree_us = 6.0 + 2 * (7 * 1.0 + 1 * 5.0) + 2 * size / 400e9 * 1e6
    assert ring_us < tree_us
    assert collective_cost("all_reduce", size, range(16), two_nodes, PARAMS) == (Algorithm.RING, pytest.approx(ring_us))


def test_small_cross_node_all_reduce_picks_tree():
    cluster = load_cluster("dgx-h200", nodes=16)
    size, n = 4096, 128
    ring_us = 6.0 + 2 * (n - 1) * 5.0 + 2 * (n - 1) / n * size / 400e9 * 1e6
    tree_us = 6.0 + 2 * (7 * 1.0 + math.ceil(math.log2(16)) * 5.0) + 2 * size / 400e9 * 1e6
    assert tree_us < ring_us
    assert collective_cost("all_reduce", size, range(128), cluster, PARAMS) == (Algorithm.TREE, pytest.approx(tree_us))


def test_data_parallel_group_with_one_rank_per_node_uses_one_nic():
    cluster = load_cluster("dgx-h100", nodes=16)
    group = [8 * node for node in range(16)]  # TP=8 inside each node, DP across nodes
    n, size = 16, 512 * MIB
    expected_us = 6.0 + (n - 1) * 5.0 + (n - 1) / n * size / 50e9 * 1e6
    assert collective_duration_us("reduce_scatter", size, group, cluster, PARAMS) == pytest.approx(expected_us)


def test_nic_efficiency_slows_cross_node_only(two_nodes):
    slow_nic = CollectiveModelParams(nic_efficiency=0.5)
    inside = collective_duration_us("all_gather", MIB, range(8), two_nodes)
    assert collective_duration_us("all_gather", MIB, range(8), two_nodes, slow_nic) == inside
    across = [0, 8]
    expected_us = 6.0 + 1 * 5.0 + 1 / 2 * MIB / 25e9 * 1e6
    assert collective_duration_us("all_gather", MIB, across, two_nodes, slow_nic) == pytest.approx(expected_us)


def test_all_to_all_across_nodes(two_nodes):
    n, k, size = 16, 8, 64 * MIB
    intra_us = (k - 1) / n * size / 450e9 * 1e6
    inter_us = (n - k) / n * size / (8 * 50e9 / k) * 1e6
    assert inter_us > intra_us
    assert collective_duration_us("all_to_all_single", size, range(16), two_nodes, PARAMS) == pytest.approx(
        3.0 + 5.0 + inter_us
    )


def test_send_recv_nvlink_vs_nic(two_nodes):
    assert collective_duration_us("send", MIB, [0, 1], two_nodes, PARAMS) == pytest.approx(3.0 + 1.0 + MIB / 450e9 * 1e6)
    assert collective_duration_us("recv", MIB, [9, 1], two_nodes, PARAMS) == pytest.approx(3.0 + 5.0 + MIB / 50e9 * 1e6)


def test_edge_cases_and_errors(two_nodes):
    assert collective_duration_us("all_reduce", MIB, [3], two_nodes) == 0.0
    assert canonical_op("_reduce_scatter_base") is CollectiveOp.REDUCE_SCATTER
    with pytest.raises(ValueError, match="unknown collective 'nccl:gossip'"):
        canonical_op("nccl:gossip")
    with pytest.raises(ValueError, match="message_bytes=-1 must be >= 0"):
        collective_duration_us("all_reduce", -1, [0, 1], two_nodes)
    with pytest.raises(ValueError, match="rank 16 is outside cluster 'dgx-h200' of world_size=16"):
        collective_duration_us("all_reduce", 1, [0, 16], two_nodes)
    with pytest.raises(ValueError, match=r"nic_efficiency=1.5 must be in \(0, 1\]"):
        CollectiveModelParams(nic_efficiency=1.5)


def test_shipped_h200_nccl_fits_reproduce_the_two_gpu_measurements():
    """The fits in maya/estimator/data/h200/nccl_fits.json against the 2 x H200 CUDA-graph timings."""
    import json
    from pathlib import Path

    from maya.estimator.collective import calibrated_params, collective_duration_us
    from maya.hardware.cluster import load_cluster

    measured = json.loads((Path(__file__).parents[2] / "benchmarks/gpu/multi_gpu_h200x2/nccl_h200x2.json").read_text())
    params = calibrated_params("h200")
    assert {f.op for f in params.nvlink_fits} == {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "send"}
    cluster = load_cluster("dgx-h200")
    errors = []
    for row in measured["rows"]:
        if row["size_bytes"] < 1 << 20:
            continue
        op = "send" if row["op"] == "send_recv" else row["op"]
        predicted = collective_duration_us(op, row["size_bytes"], (0, 1), cluster, params)
        errors.append(abs(predicted / row["graph_us"] - 1))
    errors.sort()
    assert len(errors) == 36
    assert errors[len(errors) // 2] < 0.05 and errors[-1] < 0.2
    # Uncalibrated (datasheet) NVLink is far off the measured 1 GiB all_gather.
    datasheet = collective_duration_us("all_gather", 1 << 30, (0, 1), cluster)
    assert datasheet < 0.8 * next(r["graph_us"] for r in measured["rows"] if r["op"] == "all_gather" and r["size_bytes"] == 1 << 30)


def test_overlap_slowdown_is_the_measured_one_for_h200_and_neutral_elsewhere():
    import json
    from pathlib import Path

    from maya.estimator.collective import calibrated_overlap_slowdown

    shipped = json.loads((Path(__file__).parents[2] / "maya/estimator/data/h200/nccl_fits.json").read_text())
    assert calibrated_overlap_slowdown("h200") == shipped["overlap_slowdown"] > 1.0
    assert "overlap_report.py" in shipped["overlap_source"]
    assert calibrated_overlap_slowdown("a100") == 1.0  # never measured: no slow-down assumed
