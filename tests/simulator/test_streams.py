"""Host issue, per-stream FIFO, events and syncs on one rank, with hand-computed times."""

import math

import pytest

from maya.simulator import HostModel, SimulationParams, simulate


def test_two_streams_with_event_dependency(trace, nvlink_cluster):
    rank0 = (
        trace(host_us=1.0)
        .kernel(10.0)                 # issued at 1 on stream 0: [1, 11]
        .record(7, stream=0)          # issued at 2: completes when stream 0 does, at 11
        .kernel(5.0, stream=1)        # issued at 3 on stream 1: [3, 8]
        .wait(7, stream=1)            # issued at 4: stream 1 now waits for 11
        .kernel(7.0, stream=1)        # issued at 5: [11, 18]
        .sync()                       # issued at 6: the host blocks until 18
        .table()
    )
    result = simulate({0: rank0}, nvlink_cluster)
    timeline = result.timeline(0)
    assert timeline["start_us"].tolist()[:5:2] == [1.0, 3.0, 11.0]
    assert timeline["end_us"].tolist()[:5:2] == [11.0, 8.0, 18.0]
    assert timeline["end_us"].iloc[1] == 11.0  # the event's completion
    assert timeline["end_us"].iloc[5] == 18.0  # the host leaves the sync at 18
    assert result.iteration_times_us == (18.0,)
    b = result.breakdown[0]
    assert b.compute_us == pytest.approx(17.0)  # [1, 18]
    assert b.host_bound_us == pytest.approx(1.0)  # [0, 1]: the first launch
    assert b.idle_us == 0.0


def test_wait_on_event_recorded_later_in_program_order_uses_latest_record(trace, nvlink_cluster):
    rank0 = (
        trace()
        .record(1, stream=0)          # event 1 at 0
        .kernel(50.0)                 # stream 0: [0, 50]
        .record(1, stream=0)          # event 1 re-recorded: 50
        .wait(1, stream=1)
        .kernel(5.0, stream=1)        # waits for the latest record: [50, 55]
        .table()
    )
    result = simulate({0: rank0}, nvlink_cluster)
    assert result.timeline(0)["start_us"].iloc[4] == 50.0


def test_host_bound_tiny_kernels(trace, nvlink_cluster):
    builder = trace(host_us=10.0)
    for _ in range(1000):
        builder.kernel(1.0)
    result = simulate({0: builder.table()}, nvlink_cluster)
    # Kernel i is issued at 10 * (i + 1) and runs 1 us: the GPU waits on the host every time.
    assert result.iteration_times_us == (pytest.approx(10_001.0),)
    b = result.breakdown[0]
    assert b.compute_us == pytest.approx(1000.0)
    assert b.host_bound_us == pytest.approx(10.0 + 999 * 9.0)
    assert b.idle_us == 0.0


def test_host_model_constant_applies_without_host_us_column(trace, nvlink_cluster):
    table = trace().kernel(1.0).kernel(1.0).sync().table().drop(["host_us"])
    params = SimulationParams(host=HostModel(launch_us=4.0, other_us=2.0))
    result = simulate({0: table}, nvlink_cluster, params=params)
    # Launches at 4 and 8, kernels [4, 5] and [8, 9]; the sync is issued at 10 after its 2 us.
    assert result.timeline(0)["end_us"].tolist()[:2] == [5.0, 9.0]
    assert result.iteration_times_us == (10.0,)


def test_gpu_bound_stream_queues_kernels(trace, nvlink_cluster):
    result = simulate({0: trace(host_us=1.0).kernel(100.0).kernel(100.0).kernel(100.0).table()}, nvlink_cluster)
    assert result.timeline(0)["start_us"].tolist() == [1.0, 101.0, 201.0]
    assert result.iteration_times_us == (301.0,)


def test_iteration_end_splits_iterations(trace, nvlink_cluster):
    rank0 = (
        trace()
        .kernel(30.0).iteration_end()     # GPU done at 30
        .kernel(50.0).iteration_end()     # [30, 80]: 50
        .table()
    )
    result = simulate({0: rank0}, nvlink_cluster)
    assert result.iteration_times_us == (30.0, 50.0)
    assert result.rank_iteration_ends_us[0] == (30.0, 80.0)


def test_stream_synchronize_waits_only_for_its_stream(trace, nvlink_cluster):
    rank0 = (
        trace()
        .kernel(100.0, stream=1)
        .kernel(10.0, stream=0)
        .sync("cuda:item", stream=0)  # waits for stream 0 only: host leaves at 10
        .kernel(1.0, stream=0)        # issued at 10: [10, 11]
        .table()
    )
    timeline = simulate({0: rank0}, nvlink_cluster).timeline(0)
    assert timeline["end_us"].iloc[2] == 10.0
    assert timeline["start_us"].iloc[3] == 10.0
    assert not math.isnan(timeline["issue_us"].iloc[0])


def test_pandas_input_and_missing_columns(trace, nvlink_cluster):
    frame = trace().kernel(3.0).table().to_pandas()
    assert simulate({0: frame}, nvlink_cluster).iteration_times_us == (3.0,)
    with pytest.raises(ValueError, match=r"rank 0: trace lacks columns \['duration_us'\]"):
        simulate({0: frame.drop(columns=["duration_us"])}, nvlink_cluster)


def test_rank_classes_must_cover_the_job(trace, nvlink_cluster):
    with pytest.raises(ValueError, match=r"representative rank\(s\) \[3\] have no trace"):
        simulate({0: trace().kernel(1.0).table()}, nvlink_cluster, rank_to_representative={0: 0, 1: 3})
    with pytest.raises(ValueError, match=r"world_size=16 > nodes=1 \* gpus_per_node=8 = 8"):
        simulate({0: trace().kernel(1.0).table()}, nvlink_cluster, rank_to_representative={r: 0 for r in range(16)})


def test_kernel_gap_separates_queued_kernels_only(trace, nvlink_cluster):
    # Gap 2 us. Stream 0: three 10 us kernels issued at 1, 2, 3 (queued): [1, 11], [13, 23], [25, 35].
    # Stream 1: a kernel issued at 50, after stream 1 was idle since 4: no gap, it starts at issue.
    rank0 = (
        trace(host_us=1.0)
        .kernel(10.0).kernel(10.0).kernel(10.0)
        .kernel(1.0, stream=1)                    # issued at 4: its stream's first kernel, [4, 5]
        .kernel(1.0, stream=1, host_us=46.0)      # issued at 50: stream 1 free since 5 (+2 < 50), [50, 51]
        .sync()
        .table()
    )
    params = SimulationParams(kernel_gap_us=2.0)
    timeline = simulate({0: rank0}, nvlink_cluster, params=params).timeline(0)
    assert timeline["start_us"].tolist()[:5] == [1.0, 13.0, 25.0, 4.0, 50.0]
    assert timeline["end_us"].tolist()[:5] == [11.0, 23.0, 35.0, 5.0, 51.0]
    assert simulate({0: rank0}, nvlink_cluster).timeline(0)["start_us"].tolist()[:3] == [1.0, 11.0, 21.0]
    with pytest.raises(ValueError, match="kernel_gap_us=-1.0 must be >= 0"):
        SimulationParams(kernel_gap_us=-1.0)


def test_a_cuda_graphs_replayed_kernels_take_the_graph_gap(trace, nvlink_cluster):
    # Gaps 2 us (eager) and 0.5 us (graph). Three queued 10 us kernels issued at 1, 2, 3; the last two
    # a graph's replay launched: [1, 11], [11.5, 21.5], [22, 32].
    import pyarrow as pa

    rows = trace(host_us=1.0).kernel(10.0).kernel(10.0).kernel(10.0).sync().table()
    rows = rows.append_column("graph_replay", pa.array([False, True, True, False]))
    params = SimulationParams(kernel_gap_us=2.0, graph_kernel_gap_us=0.5)
    timeline = simulate({0: rows}, nvlink_cluster, params=params).timeline(0)
    assert timeline["start_us"].tolist()[:3] == [1.0, 11.5, 22.0]
    same = simulate({0: rows}, nvlink_cluster, params=SimulationParams(kernel_gap_us=2.0)).timeline(0)
    assert same["start_us"].tolist()[:3] == [1.0, 13.0, 25.0]  # no graph figure: the eager gap
    with pytest.raises(ValueError, match="graph_kernel_gap_us=-1.0 must be >= 0"):
        SimulationParams(graph_kernel_gap_us=-1.0)


def test_an_rnn_keeps_the_host_launching_while_the_gpu_runs_it(trace, nvlink_cluster):
    # cuDNN RNN rows whose host launches take 30 us and 20 us after their issue: the GPU starts each
    # at once (its first kernels are out) and cannot end it before the last launch; the host issues
    # the next row only after launching.
    import pyarrow as pa

    rows = (
        trace(host_us=1.0)
        .kernel(10.0, op="aten::_cudnn_rnn")  # issued at 1: [1, 31], launch-bound (1 + 30)
        .kernel(5.0)                          # the host is free at 31, issues at 32: [32, 37]
        .kernel(50.0, op="aten::_cudnn_rnn")  # issued at 33: [37, 87], GPU-bound; the host is free at 53
        .sync()                               # issued at 54, waits for 87
        .table()
    )
    rows = rows.append_column("launch_us", pa.array([30.0, 0.0, 20.0, 0.0]))
    result = simulate({0: rows}, nvlink_cluster)
    timeline = result.timeline(0)
    assert timeline["start_us"].tolist()[:3] == [1.0, 32.0, 37.0]
    assert timeline["end_us"].tolist()[:3] == [31.0, 37.0, 87.0]
    assert result.iteration_times_us == (87.0,)
    without = simulate({0: rows.drop_columns(["launch_us"])}, nvlink_cluster).timeline(0)
    assert without["end_us"].tolist()[:3] == [11.0, 16.0, 66.0]  # the host's launches cost nothing
