"""NCCL cost model: hand-computed ring, tree, all_to_all and send/recv times."""

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest

from maya.estimator.collective import (
    Algorithm,
    CollectiveModelParams,
    CollectiveOp,
    bus_bandwidth_bytes_per_s,
    bus_bandwidth_factor,
    calibrated_params,
    canonical_op,
    collective_cost,
    collective_duration_us,
    nvlink_fit_duration_us,
)
from maya.estimator.nccl_tuning import Protocol, nccl_protocol
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


GPU_DIR = Path(__file__).parents[2] / "benchmarks/gpu"
BENCH_OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "send_recv")


def _graph_times(path: str) -> dict[tuple[str, int], float]:
    """(nccl_bench.py op, size) -> GPU time per call replayed from a CUDA graph, microseconds."""
    rows = json.loads((GPU_DIR / path).read_text())["rows"]
    return {(r["op"], r["size_bytes"]): r["graph_us"] for r in rows if r.get("graph_us")}


def _shipped_us(bench_op: str, size: int, n: int) -> float:
    """The shipped n-rank fit's time, as benchmarks/collective_model.py reports it. (The simulator prices a
    send/recv between two ranks with the 2-rank fit; nccl_bench.py's send_recv on 4 GPUs runs two pairs.)"""
    op = CollectiveOp("send" if bench_op == "send_recv" else bench_op)
    params = calibrated_params("h200")
    fit = next(f for f in params.nvlink_fits if f.op == op.value and f.ranks == n)
    return nvlink_fit_duration_us(fit, op, size, n, load_cluster("dgx-h200").nvlink_bandwidth_bytes_per_s, params.nccl_graph)


@pytest.mark.parametrize(("path", "n", "max_error"), [
    ("multi_gpu_h200x2/nccl_h200x2.json", 2, 0.07),
    # 4 GPUs: send_recv at 64 MiB took 270 us, 32% more than on 2 GPUs and off the 4-GPU trend (-16%).
    ("multi_gpu_h200x4/nccl_h200x4.json", 4, 0.17),
])
def test_shipped_h200_nccl_fits_reproduce_the_fitted_measurements(path, n, max_error):
    """Every fitted size >= 1 MiB of the shipped fits (maya/estimator/data/h200/nccl_fits.json)."""
    errors = sorted(abs(_shipped_us(op, size, n) / t - 1) for (op, size), t in _graph_times(path).items() if size >= MIB)
    assert len(errors) == 36
    assert errors[len(errors) // 2] < 0.015 and errors[-1] < max_error
    assert sum(e > 0.10 for e in errors) <= (0 if n == 2 else 2)
    # Uncalibrated (datasheet) NVLink is far off the measured 1 GiB all_gather.
    datasheet = collective_duration_us("all_gather", 1 << 30, range(n), load_cluster("dgx-h200"))
    assert datasheet < 0.8 * _graph_times(path)[("all_gather", 1 << 30)]


def test_shipped_h200_nccl_fits_predict_the_dense_sizes_they_never_saw():
    """2 GPUs, 1.5 to 32 MiB: two dense runs, neither fitted. A run's outliers (up to +36%) do not repeat,
    so each size is held to the faster of the two runs."""
    fitted = {size for _, size in _graph_times("multi_gpu_h200x2/nccl_h200x2.json")}
    runs = [_graph_times(f"multi_gpu_h200x2/nccl_h200x2_dense{tail}.json") for tail in ("", "_repeat")]
    errors = {}
    for key in runs[0]:
        if key[1] >= MIB and key[1] not in fitted:
            errors[key] = _shipped_us(*key, 2) / min(run[key] for run in runs) - 1
    assert len(errors) == 6 * 8  # 1.5, 2, 3, 6, 8, 12, 24, 32 MiB
    worst = sorted(map(abs, errors.values()))
    assert worst[len(worst) // 2] < 0.035
    # Over 10%: send_recv at 1.5 MiB, +11.8% (both runs took less at 1.5 MiB than at 1 MiB).
    assert worst[-1] < 0.12 and worst[-2] < 0.10


@pytest.mark.parametrize("bench_op", ["all_reduce", "reduce_scatter", "broadcast"])
def test_shipped_fits_bend_where_nccl_changes_protocol(bench_op):
    """Between 1 and 4 MiB on 2 GPUs, the steepest measured step (us per byte, the faster of the two dense
    runs at each size) is the one across which NCCL leaves LL for Simple, and it is the model's steepest."""
    runs = [_graph_times(f"multi_gpu_h200x2/nccl_h200x2_dense{tail}.json") for tail in ("", "_repeat")]
    sizes = [s for (op, s) in sorted(runs[0]) if op == bench_op and MIB <= s <= 4 * MIB]
    measured = [min(run[(bench_op, s)] for run in runs) for s in sizes]
    model = [_shipped_us(bench_op, s, 2) for s in sizes]

    def steepest(times):
        return max(range(len(sizes) - 1), key=lambda i: (times[i + 1] - times[i]) / (sizes[i + 1] - sizes[i]))

    graph = calibrated_params("h200").nccl_graph
    protocols = [nccl_protocol(CollectiveOp(bench_op), s, 2, graph) for s in sizes]
    switch = next(i for i in range(len(sizes) - 1) if protocols[i] is Protocol.LL and protocols[i + 1] is Protocol.SIMPLE)
    assert steepest(measured) == switch == steepest(model)


@pytest.mark.parametrize("n", [2, 3, 4, 8])
def test_shipped_fits_are_positive_and_grow_with_size(n):
    """1 B to 4 GiB. On the measured 2 and 4 GPUs (3 is priced as 4) a call never gets faster as it grows,
    except all_to_all where NCCL leaves LL for Simple at a fixed 512 KiB per peer (enqueue.cc
    addP2pToPlan), not where the two cost curves cross: one step down of under 10% there. On 8 GPUs,
    priced with the 4-GPU fits while NCCL's switches move with the group size, only positivity holds."""
    cluster, params = load_cluster("dgx-h200"), calibrated_params("h200")
    sizes = sorted({int(s) for s in np.logspace(0, 32, 3000, base=2)})
    for op in ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "send"):
        group = range(2) if op == "send" else range(n)
        times = np.array([collective_duration_us(op, s, group, cluster, params) for s in sizes])
        assert (times > 0).all()
        if n == 8:
            continue
        drops = np.flatnonzero(times[1:] < times[:-1] * (1 - 1e-12))
        if op != "all_to_all":
            assert drops.size == 0, (op, [sizes[i] for i in drops])
            continue
        assert drops.size <= 1 and (times[drops + 1] / times[drops] > 0.9).all()
        for i in drops:
            before, after = (nccl_protocol(CollectiveOp.ALL_TO_ALL, s, n, params.nccl_graph) for s in sizes[i:i + 2])
            assert (before, after) == (Protocol.LL, Protocol.SIMPLE)


def test_overlap_slowdown_is_the_measured_one_for_h200_and_neutral_elsewhere():
    import json
    from pathlib import Path

    from maya.estimator.collective import calibrated_overlap_slowdown

    shipped = json.loads((Path(__file__).parents[2] / "maya/estimator/data/h200/nccl_fits.json").read_text())
    assert calibrated_overlap_slowdown("h200") == shipped["overlap_slowdown"] > 1.0
    assert "overlap_report.py" in shipped["overlap_source"]
    assert calibrated_overlap_slowdown("a100") == 1.0  # never measured: no slow-down assumed
