"""The Perfetto/Chrome JSON export."""

import json

from maya.simulator import export_chrome_trace, simulate
from maya.simulator.chrome_trace import HOST_TID


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
