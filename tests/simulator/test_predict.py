"""`maya.predict.predict` on a real emulated GPT trace: one rank, two data-parallel ranks, rank classes,
and the step on a fast and a slow host."""

import json
import statistics

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from maya.estimator.host_cost import host_speed_range
from maya.hardware.cluster import cluster_for_gpu, load_cluster
from maya.predict import default_params, estimate_and_simulate, predict
from maya.simulator import simulate
from maya.summary import HOST_BOUND_SHARE
from maya.trace import TRACE_SCHEMA, read_rank_trace

GRAD_BYTES = 64 << 20


def _with_all_reduce(table: pa.Table, *, repeat_kernels: int = 1) -> pa.Table:
    """The trace with a 64 MiB all-reduce over ranks [0, 1] before each iteration end (DDP's gradient
    sync), every kernel row issued `repeat_kernels` times (a straggler does more work)."""
    rows = []
    for row in table.to_pylist():
        if row["kind"] == "iteration_end":
            rows.append({**row, "kind": "collective", "op": "nccl:all_reduce", "group_name": "dp",
                         "group_ranks": [0, 1], "group_seq": row["iteration"], "message_bytes": GRAD_BYTES,
                         "reduce_op": "sum", "flops": 0.0, "bytes": 0})
        rows += [row] * (repeat_kernels if row["kind"] == "kernel" else 1)
    for seq, row in enumerate(rows):
        row["seq"] = seq
    return pa.Table.from_pylist(rows, schema=TRACE_SCHEMA)


def _kernel_flops(table: pa.Table) -> dict[int, float]:
    kernels = table.filter(pc.equal(table["kind"], "kernel")).group_by("iteration").aggregate([("flops", "sum")])
    return dict(zip(kernels["iteration"].to_pylist(), kernels["flops_sum"].to_pylist()))


def test_one_rank_matches_emulate_and_writes_the_timeline(gpt_run, tmp_path):
    summary, trace_dir = gpt_run
    table = read_rank_trace(trace_dir, 0)
    p = predict({0: table}, "h200", trace_dir=tmp_path)
    assert p.iteration_ms == pytest.approx([it.time_ms for it in summary.iterations])
    assert p.world_size == 1 and p.slowest_rank == 0 and p.cluster.name == "dgx-h200"
    (only,) = p.rank_breakdowns
    assert only["rank"] == 0 and only["members"] == 1
    assert {k: only[k] for k in p.breakdown} == p.breakdown
    assert sum(p.breakdown.values()) == pytest.approx(only["total_ms"])
    flops = _kernel_flops(table)
    assert p.model_flops_per_iteration == pytest.approx([flops[0], flops[1]])
    assert len(p.top_ops) == 10 and p.top_ops[0]["gpu_ms"] >= p.top_ops[-1]["gpu_ms"]
    assert sum(p.source_shares.values()) == pytest.approx(1.0)
    assert p.timeline_path == str(tmp_path / "timeline.json")
    assert json.loads((tmp_path / "timeline.json").read_text())["traceEvents"]
    extra = p.summary_extra()
    assert extra["breakdown_ms"] == p.breakdown and extra["timeline"] == p.timeline_path
    assert extra["model_flops_per_iteration"] == pytest.approx((flops[0] + flops[1]) / 2)


def test_two_ranks_with_a_straggler_report_each_rank(gpt_run):
    table = read_rank_trace(gpt_run[1], 0)
    tables = {0: _with_all_reduce(table), 1: _with_all_reduce(table, repeat_kernels=2)}
    p = predict(tables, "h200")
    assert p.world_size == 2 and p.timeline_path is None
    by_rank = {b["rank"]: b for b in p.rank_breakdowns}
    # Rank 1 issues every kernel twice: it is the slowest, and rank 0 waits for it in the all-reduce.
    assert p.slowest_rank == 1
    assert {k: by_rank[1][k] for k in p.breakdown} == p.breakdown
    assert by_rank[1]["compute_ms"] > 1.5 * by_rank[0]["compute_ms"]
    assert by_rank[0]["idle_ms"] > 0 and by_rank[0]["comm_ms"] > 0
    assert by_rank[1]["total_ms"] >= by_rank[0]["total_ms"]
    flops = _kernel_flops(table)
    assert p.model_flops_per_iteration == pytest.approx([3 * flops[0], 3 * flops[1]])  # 1x + 2x
    assert any(row["op"] == "nccl:all_reduce" for row in p.top_ops)


def test_rank_classes_weight_flops_and_breakdown(gpt_run):
    table = _with_all_reduce(read_rank_trace(gpt_run[1], 0))
    p = predict({0: table}, "h200", rank_to_representative={0: 0, 1: 0})
    assert p.world_size == 2 and [b["members"] for b in p.rank_breakdowns] == [2]
    flops = _kernel_flops(table)
    assert p.model_flops_per_iteration == pytest.approx([2 * flops[0], 2 * flops[1]])


def test_cluster_must_match_the_gpu_and_fit_the_job(gpt_run):
    tables = {0: read_rank_trace(gpt_run[1], 0)}
    with pytest.raises(ValueError, match="cluster 'dgx-h100' has gpu='h100' but the ops are estimated for gpu='h200'"):
        predict(tables, "h200", cluster=load_cluster("dgx-h100"))
    tiny = load_cluster("dgx-h200")
    with pytest.raises(ValueError, match=r"world_size=16 > nodes=1 \* gpus_per_node=8 = 8 GPUs"):
        predict(tables, "h200", cluster=tiny, rank_to_representative={r: 0 for r in range(16)})


def test_another_machines_host_figures_replace_the_shipped_ones(gpt_run):
    # `maya profile --families host` on another machine: its per-op figures price every row's host
    # time, and a slower host gives a step at least as long.
    from maya.estimator.host_cost import host_overhead
    from maya.hardware.cluster import cluster_for_gpu
    from maya.predict import estimate_and_simulate

    tables = {0: read_rank_trace(gpt_run[1], 0)}
    cluster = cluster_for_gpu("h200", 1)
    shipped, base = estimate_and_simulate(tables, "h200", cluster)
    slower = {k: 3.0 * v for k, v in host_overhead("h200").items()}
    priced, slow = estimate_and_simulate(tables, "h200", cluster, host_per_op_us=slower)
    launches = shipped[0]["kind"].isin(["kernel", "memcpy", "collective"]).to_numpy()
    assert (priced[0]["host_us"].to_numpy()[launches] > shipped[0]["host_us"].to_numpy()[launches]).all()
    assert priced[0]["duration_us"].equals(shipped[0]["duration_us"])
    assert all(s >= b for s, b in zip(slow.iteration_times_us, base.iteration_times_us))
    assert sum(slow.iteration_times_us) > sum(base.iteration_times_us)


def test_estimate_sources_leave_out_work_after_the_last_iteration(gpt_run):
    # The GPT trace, then a 10 GiB copy after its last iteration end that only roofline can time (a
    # checkpoint written to the host): the sources of the steady state are the steps' alone.
    _, trace_dir = gpt_run
    table = read_rank_trace(trace_dir, 0)
    rows = table.to_pylist()
    ends = sum(row["kind"] == "iteration_end" for row in rows)
    tail = {**rows[-1], "seq": rows[-1]["seq"] + 1, "iteration": ends, "kind": "kernel",
            "op": "aten::unmodelled_tail_op", "bytes": 10 << 30, "flops": 0.0}
    with_tail = pa.concat_tables([table, pa.Table.from_pylist([tail], schema=TRACE_SCHEMA)])
    before, after = predict({0: table}, "h200"), predict({0: with_tail}, "h200")
    assert after.iteration_ms == pytest.approx(before.iteration_ms)
    assert after.source_shares == pytest.approx(before.source_shares)
    assert after.breakdown == pytest.approx(before.breakdown)
    assert [r["op"] for r in after.top_ops] == [r["op"] for r in before.top_ops]


def test_a_host_bound_prediction_gives_the_step_on_a_fast_and_a_slow_host(gpt_run):
    table = read_rank_trace(gpt_run[1], 0)
    plain = predict({0: table}, "h200")
    assert plain.host_speed_range_ms is None and "host_speed_range_ms" not in plain.summary_extra()
    assert plain.breakdown["host_bound_ms"] >= HOST_BOUND_SHARE * sum(plain.breakdown.values())  # a tiny GPT: host-bound
    p = predict({0: table}, "h200", with_host_speed_range=True)
    assert p.iteration_ms == plain.iteration_ms
    # The same estimated trace simulated with every host cost scaled by the shipped range's ends.
    estimated, _ = estimate_and_simulate({0: table}, "h200", cluster_for_gpu("h200", 1))
    expected = []
    for scale in host_speed_range("h200"):
        scaled = {r: df.assign(host_us=df["host_us"] * scale, launch_us=df["launch_us"] * scale) for r, df in estimated.items()}
        times = simulate(scaled, cluster_for_gpu("h200", 1), params=default_params("h200")).iteration_times_us
        expected.append(statistics.median(times) / 1000.0)
    assert p.host_speed_range_ms == pytest.approx(tuple(expected))
    fast, slow = p.host_speed_range_ms
    assert fast < statistics.median(p.iteration_ms) < slow
    assert p.summary_extra()["host_speed_range_ms"] == [fast, slow]
    # Host figures measured on the machine itself leave no machine-to-machine range to give.
    measured = predict({0: table}, "h200", with_host_speed_range=True, host_per_op_us={"aten_op_us": 9.0})
    assert measured.host_speed_range_ms is None
