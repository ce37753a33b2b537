"""The Perfetto/Chrome JSON export."""

import json

import numpy as np
import pytest

from maya.simulator import export_chrome_trace, simulate
from maya.simulator.chrome_trace import HOST_TID, ITERATIONS_TID, module_runs


def test_export_is_valid_json_with_expected_events(trace, nvlink_cluster, tmp_path):
    traces = {
        r: trace(host_us=2.0).kernel(10.0, op="aten::mm", module="blocks.0.mlp")
        .collective("all_reduce", 1024, [0, 1], stream=1).sync().table()
        for r in (0, 1)
    }
    result = simulate(traces, nvlink_cluster)
    path = export_chrome_trace(result, tmp_path / "out" / "trace.json")
    data = json.loads(path.read_text())
    events = data["traceEvents"]
    names = {(e["pid"], e["args"]["name"]) for e in events if e["name"] in ("process_name", "thread_name")}
    assert {(0, "rank 0"), (1, "rank 1"), (0, "host"), (0, "stream 0"), (0, "stream 1")} <= names
    complete = [e for e in events if e["ph"] == "X"]
    mm = [e for e in complete if e["name"] == "aten::mm" and e["tid"] == 0 and e["pid"] == 0]
    assert len(mm) == 1
    assert mm[0]["ts"] == 2.0 and mm[0]["dur"] == 10.0 and mm[0]["args"]["module"] == "blocks.0.mlp"
    assert isinstance(mm[0]["args"]["iteration"], int)
    launches = [e for e in complete if e["tid"] == HOST_TID and e["pid"] == 1 and e["name"] == "aten::mm"]
    assert launches[0]["ts"] == 0.0 and launches[0]["dur"] == 2.0
    comm = [e for e in complete if e["name"] == "nccl:all_reduce" and e["tid"] == 1]
    assert len(comm) == 2 and comm[0]["ts"] == 4.0
    assert any(e["name"] == "wait cuda:synchronize" for e in complete)
    assert all(e["dur"] >= 0 for e in complete)


def test_module_runs_nest_by_path_prefix_and_split_by_phase():
    modules = np.array(["blocks.0.attn", "blocks.0.attn", "blocks.0.mlp", "blocks.1.mlp", "", "blocks.1.mlp"],
                       dtype=object)
    phases = np.array(["forward"] * 5 + ["backward"], dtype=object)
    begin = np.arange(6, dtype=float) * 10
    runs = module_runs(modules, phases, begin, begin + 5)
    assert sorted(runs, key=lambda r: (r[3], -r[4])) == [
        ("blocks", "blocks", "forward", 0.0, 35.0),
        ("blocks.0", "blocks.0", "forward", 0.0, 25.0),
        ("blocks.0.attn", "blocks.0.attn", "forward", 0.0, 15.0),
        ("blocks.0.mlp", "blocks.0.mlp", "forward", 20.0, 25.0),
        ("blocks.1", "blocks.1", "forward", 30.0, 35.0),
        ("blocks.1.mlp", "blocks.1.mlp", "forward", 30.0, 35.0),
        # After the loss (no module), the backward: slices of its own.
        ("blocks backward", "blocks", "backward", 50.0, 55.0),
        ("blocks.1 backward", "blocks.1", "backward", 50.0, 55.0),
        ("blocks.1.mlp backward", "blocks.1.mlp", "backward", 50.0, 55.0),
    ]
    assert module_runs(np.array([""], dtype=object), np.array(["other"], dtype=object), begin[:1], begin[:1]) == []


def test_module_slices_nest_over_the_ops_of_a_real_run(gpt_run, tmp_path):
    # A two-layer GPT emulated: on every track the slices (module and op alike) nest properly, and each
    # op of a module lies inside a slice of that module in its phase.
    _, trace_dir = gpt_run
    import maya

    maya.simulate_trace_dir(trace_dir, timeline_path=tmp_path / "t.json")
    complete = [e for e in json.loads((tmp_path / "t.json").read_text())["traceEvents"] if e["ph"] == "X"]
    tracks = {}
    for e in complete:
        tracks.setdefault((e["pid"], e["tid"]), []).append(e)
    seen = set()
    for events in tracks.values():
        events.sort(key=lambda e: (e["ts"], -e["dur"], e["args"]["kind"] != "module"))
        stack = []
        for e in events:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"] + 1e-6:
                stack.pop()
            assert not stack or e["ts"] + e["dur"] <= stack[-1]["ts"] + stack[-1]["dur"] + 1e-6, (stack[-1], e)
            if e["args"]["kind"] not in ("module", "iteration") and e["args"]["module"]:
                inside = {(s["args"]["module"], s["args"]["phase"]) for s in stack if s["args"]["kind"] == "module"}
                assert any(m == e["args"]["module"] for m, _ in inside), e
                seen.add(e["args"]["module"])
            stack.append(e)
    names = {e["name"] for e in complete if e["args"]["kind"] == "module"}
    assert {"blocks.0.qkv", "blocks.1.qkv backward", "lm_head", "lm_head backward", "blocks"} <= names
    assert {"blocks.0.qkv", "blocks.1.fc", "lm_head"} <= seen
    assert all("iteration" not in e["args"] for e in complete if e["args"]["kind"] == "module")


def test_iteration_slices_and_the_memory_counter_match_the_summary(gpt_run, tmp_path):
    emulated, trace_dir = gpt_run
    import maya

    s = maya.simulate_trace_dir(trace_dir, timeline_path=tmp_path / "t.json")
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    steps = [e for e in events if e["ph"] == "X" and e["args"]["kind"] == "iteration"]
    assert [e["name"] for e in steps] == [f"iteration {k}" for k in range(len(s.iterations))]
    assert [e["args"]["time_ms"] for e in steps] == pytest.approx([it.time_ms for it in s.iterations])
    assert all(e["tid"] == ITERATIONS_TID and "iteration" not in e["args"] for e in steps)
    memory = [e for e in events if e["ph"] == "C" and e["name"] == "GPU memory (GiB)"]
    assert max(e["args"]["allocated"] for e in memory) * (1 << 30) == pytest.approx(emulated.peak_allocated_bytes)
    assert max(e["args"]["reserved"] for e in memory) * (1 << 30) == pytest.approx(emulated.peak_reserved_bytes)
    assert [e["ts"] for e in memory] == sorted(e["ts"] for e in memory)
