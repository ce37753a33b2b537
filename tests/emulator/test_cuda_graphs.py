"""CUDA graphs under emulation (`maya.emulator.cuda_graphs`): a capture's GPU work is issued again at
every replay, which the host model charges one launch."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import maya
from maya.emulator.attrs import GRAPH_REPLAY
from maya.estimator.host_cost import host_costs_us, host_overhead, host_scale
from maya.trace import read_rank_trace

STEPS = 4
SCRIPTS = Path(__file__).parent / "scripts"


def _trace(summary, rank: int = 0):
    assert summary.exit_code == 0, summary.error
    return read_rank_trace(summary.trace_dir, rank).to_pandas()


def _kernels(table, iteration: int) -> list[tuple[str, str, str]]:
    rows = table[(table.kind == "kernel") & (table.iteration == iteration)]
    return list(zip(rows.op, rows.phase, rows.module))


@pytest.fixture(scope="module")
def whole_step(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cuda_graph_step")
    return {mode: maya.emulate(SCRIPTS / "cuda_graph_step.py", [mode, str(STEPS)], trace_dir=tmp / mode)
            for mode in ("graph", "eager")}


def test_whole_step_capture_replays_each_step_as_its_eager_kernels(whole_step):
    graph, eager = _trace(whole_step["graph"]), _trace(whole_step["eager"])
    # The optimizer step captured in the graph ends an iteration at each replay, not at the capture.
    assert len(whole_step["graph"].iterations) == len(whole_step["eager"].iterations) == 3 + STEPS
    last = 3 + STEPS - 1
    replayed = graph[(graph.iteration == last) & (graph.kind == "kernel")]
    marked = replayed["attrs"].map(lambda a: json.loads(a).get(GRAPH_REPLAY, False))
    # The step's forward, backward and optimizer kernels, from modules and phases as eagerly; the graph
    # holds no zero_grad (captured after it) and the copy of new data runs outside it, unmarked.
    assert [k for k, m in zip(_kernels(graph, last), marked) if m] == [
        k for k in _kernels(eager, last) if k[0] not in ("aten::copy_", "aten::randn")]
    assert set(replayed.op[~marked.to_numpy()]) == {"aten::copy_", "aten::randn"}
    assert (graph.op == "cuda:graph_replay").sum() == STEPS
    # Nothing of the capture itself is left in the trace: the iteration that captured holds one
    # replay's kernels, not two.
    capture_iteration = graph[graph.iteration == 3]
    assert (capture_iteration.op == "cuda:graph_replay").sum() == 1
    assert (capture_iteration.kind == "kernel").sum() == (graph[graph.iteration == last].kind == "kernel").sum()


def test_a_replay_costs_the_host_one_launch_so_a_small_model_steps_faster(whole_step):
    graph = _trace(whole_step["graph"])
    host = host_costs_us(graph)
    replay_rows = graph["attrs"].fillna("").str.contains(GRAPH_REPLAY).to_numpy()
    assert replay_rows.any() and np.all(host[replay_rows] == 0.0)
    launch = host[(graph.op == "cuda:graph_replay").to_numpy()]
    assert np.allclose(launch, host_scale("h200") * host_overhead("h200")["aten_op_us"])
    # Host-bound eagerly (a 16-sample MLP): the graph's step is its GPU time, several times shorter.
    graph_ms, eager_ms = whole_step["graph"].median_iteration_ms, whole_step["eager"].median_iteration_ms
    assert 0 < graph_ms < eager_ms / 2, (graph_ms, eager_ms)


def test_memory_peaks_are_the_captures(whole_step):
    graph, eager = whole_step["graph"], whole_step["eager"]
    assert graph.peak_allocated_bytes == pytest.approx(eager.peak_allocated_bytes, rel=0.05)


def test_make_graphed_callables_trains_a_graphed_block(scripts, tmp_path):
    graphed = maya.emulate(scripts / "cuda_graph_callables.py", ["graph"], trace_dir=tmp_path / "g")
    eager = maya.emulate(scripts / "cuda_graph_callables.py", ["eager"], trace_dir=tmp_path / "e")
    table = _trace(graphed)
    assert len(graphed.iterations) == len(eager.iterations) == 3
    steady = table[table.iteration == 2]
    # Its forward and its backward graph replay in every step.
    assert (steady.op == "cuda:graph_replay").sum() == 2
    replayed = steady[steady["attrs"].fillna("").str.contains(GRAPH_REPLAY)]
    assert {"aten::addmm", "aten::gelu", "aten::gelu_backward", "aten::mm"} <= set(replayed.op)
    assert graphed.median_iteration_ms < eager.median_iteration_ms


def test_host_synchronization_inside_a_capture_fails_as_on_a_gpu(tmp_path):
    script = tmp_path / "sync.py"
    script.write_text(
        "import torch\n"
        "x = torch.ones(4, device='cuda')\n"
        "g = torch.cuda.CUDAGraph()\n"
        "with torch.cuda.graph(g):\n"
        "    y = x * 2\n"
        "    print(y.sum().item())\n"
    )
    s = maya.emulate(script, trace_dir=tmp_path / "t")
    assert s.exit_code == 1
    assert "operation not permitted when stream is capturing" in s.error and "inside a CUDA graph capture" in s.error


def test_a_graph_used_out_of_order_is_named(tmp_path):
    script = tmp_path / "order.py"
    script.write_text("import torch\ng = torch.cuda.CUDAGraph()\ng.replay()\n")
    s = maya.emulate(script, trace_dir=tmp_path / "t")
    assert s.exit_code == 1 and "CUDA graph replay before its capture ended" in s.error
    script.write_text(
        "import torch\nx = torch.ones(4, device='cuda')\ng = torch.cuda.CUDAGraph()\n"
        "with torch.cuda.graph(g):\n    y = x + 1\n"
        "with torch.cuda.graph(g):\n    y = x + 1\n"
    )
    s = maya.emulate(script, trace_dir=tmp_path / "t2")
    assert s.exit_code == 1 and "already owns a captured graph" in s.error


def test_collectives_in_a_graph_replay_on_every_rank_and_simulate(scripts, tmp_path):
    s = maya.emulate(scripts / "cuda_graph_all_reduce.py", nproc_per_node=2, trace_dir=tmp_path / "t",
                     in_process=True, dedup=False)
    assert s.exit_code == 0, s.error
    assert len(s.iterations) == 3 and all(it.time_ms > 0 for it in s.iterations)
    for rank in (0, 1):
        table = _trace(s, rank)
        calls = table[table.op == "nccl:all_reduce"]
        # Weight and bias all-reduced once in the warm-up and again at each of the 3 replays (none at
        # the capture), numbered on as eagerly.
        assert len(calls) == 2 + 2 * 3
        assert list(calls.group_seq) == list(range(8))
        assert calls["attrs"].fillna("").str.contains(GRAPH_REPLAY).sum() == 6


def test_ddp_step_captured_whole_replays_its_gradient_all_reduces(scripts, tmp_path):
    # The DDP reducer's bucket all-reduces, issued from C++ during the captured backward, replay
    # with the graph.
    s = maya.emulate(scripts / "cuda_graph_ddp.py", nproc_per_node=2, trace_dir=tmp_path / "t",
                     in_process=True, dedup=False)
    assert s.exit_code == 0, s.error
    assert len(s.iterations) == 11 + 4
    table = _trace(s)
    calls = table[table.op == "nccl:all_reduce"]
    replayed = calls[calls["attrs"].fillna("").str.contains(GRAPH_REPLAY)]
    assert sorted(set(replayed.iteration)) == [11, 12, 13, 14]
    assert (replayed.groupby("iteration").size() == calls[calls.iteration == 10].shape[0]).all()
    eager_ms, replay_ms = s.iterations[10].time_ms, s.iterations[14].time_ms
    assert 0 < replay_ms < eager_ms / 2, (replay_ms, eager_ms)
