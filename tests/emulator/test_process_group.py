"""The fake NCCL process group: every call is recorded with its group, size, sequence and stream.

`scripts/collectives.py` issues each torch.distributed call once on a 2-rank world; the sizes below
are computed by hand from its tensors (nccl-tests "size": the all_reduce buffer, the all_gather
output, the reduce_scatter input). It has no DeviceMesh, so it is emulated in this process;
`scripts/process_groups.py` builds one and runs in a fresh process (`emulate_rank_isolated`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from maya.emulator.distributed import OBJECT_BYTES
from maya.world.rank_emulation import emulate_rank

pytestmark = pytest.mark.filterwarnings("ignore:`torch.distributed.*` is deprecated:FutureWarning")

SCRIPTS = Path(__file__).parent / "scripts"
F32, BF16, INT64 = 4, 2, 8


def _emulate(name: str, args: list[str], rank: int, world_size: int):
    result = emulate_rank(str(SCRIPTS / name), args, "h200", rank, world_size, world_size)
    assert result.exit_code == 0, result.error
    return result


@pytest.fixture(scope="module")
def rank0():
    return _emulate("collectives.py", [], rank=0, world_size=2).table.to_pylist()


@pytest.fixture(scope="module")
def rank1():
    return _emulate("collectives.py", [], rank=1, world_size=2).table.to_pylist()


def _collectives(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["kind"] == "collective"]


def _group_calls(rows: list[dict]) -> list[dict]:
    """Collectives (not point-to-point) in issue order."""
    return [r for r in _collectives(rows) if r["peer"] is None]


# (op, message_bytes, reduce_op) of collectives.py's group calls, in order, computed from its tensors.
EXPECTED_GROUP_CALLS = [
    ("nccl:all_reduce", 256 * F32, "max"),
    ("nccl:reduce", 256 * F32, "sum"),
    ("nccl:broadcast", 256 * F32, None),
    ("nccl:all_gather", 2 * 256 * F32, None),  # list form: the output, both ranks' 1 KiB
    ("nccl:all_gather", 2 * 256 * F32, None),  # all_gather_into_tensor
    ("nccl:reduce_scatter", 2 * 256 * F32, "sum"),  # list form: the input, both chunks
    ("nccl:reduce_scatter", 2 * 256 * F32, "sum"),  # reduce_scatter_tensor
    ("nccl:all_to_all", 2 * 64 * F32, None),  # list form: both input chunks
    ("nccl:all_to_all", 2 * 256 * F32, None),  # all_to_all_single
    ("nccl:all_reduce", 1000 * F32, "sum"),  # async_op=True
    ("nccl:all_reduce", 500 * F32, "sum"),  # async_op=True, waited under a side stream
    ("nccl:barrier", 1 * F32, None),  # ProcessGroupNCCL: an all-reduce of one float
    ("nccl:all_reduce", (10 + 20) * F32, "sum"),  # _coalescing_manager: both tensors in one call
    ("nccl:all_reduce", 8 * F32, "sum"),  # functional all_reduce
    # Object collectives make c10d's calls: int64 pickle sizes, then the pickles (1 KiB each).
    ("nccl:all_gather", 2 * INT64, None),  # all_gather_object: every rank's size
    ("nccl:all_gather", 2 * OBJECT_BYTES, None),  # ... every rank's pickle
    ("nccl:broadcast", 2 * INT64, None),  # broadcast_object_list of 2 objects
    ("nccl:broadcast", 2 * OBJECT_BYTES, None),
    ("nccl:all_gather", 2 * INT64, None),  # gather_object: sizes go to every rank
    ("nccl:gather", 2 * OBJECT_BYTES, None),  # ... pickles to the destination
    ("nccl:broadcast", INT64, None),  # scatter_object_list: the largest pickle's size
    ("nccl:scatter", 2 * OBJECT_BYTES, None),  # ... the pickles
    ("nccl:scatter", 2 * INT64, None),  # ... and their sizes
]
OBJECT_CALLS = 9


@pytest.mark.parametrize("backend", ["nccl", "none", "cuda:nccl,cpu:gloo"])
def test_every_nccl_backend_spelling_gets_the_emulated_group(backend):
    # The script itself asserts get_backend() == "nccl" and world_size == 2.
    rows = _emulate("collectives.py", ["--backend", backend], rank=0, world_size=2).table.to_pylist()
    calls = _group_calls(rows)
    assert [(r["op"], r["message_bytes"], r["reduce_op"]) for r in calls] == EXPECTED_GROUP_CALLS
    assert {r["group_name"] for r in calls} == {"0"}
    assert all(r["group_ranks"] == [0, 1] for r in _collectives(rows))


def test_group_calls_are_numbered_per_group_on_one_nccl_stream(rank0):
    calls = _group_calls(rank0)
    assert [r["group_seq"] for r in calls] == list(range(len(EXPECTED_GROUP_CALLS)))
    streams = {r["stream"] for r in calls}
    assert len(streams) == 1 and 0 not in streams  # the group's own stream, not the default one


def test_roots_are_global_ranks(rank0):
    reduce, broadcast = _group_calls(rank0)[1:3]
    assert json.loads(reduce["attrs"]) == {"root": 1} and json.loads(broadcast["attrs"]) == {"root": 1}


def test_both_ranks_record_the_same_group_calls(rank0, rank1):
    # Even the object collectives, whose objects differ in size across ranks or are placeholders on
    # the receiving ranks: otherwise the simulator could never match them.
    def key(rows):
        return [(r["op"], r["group_seq"], r["message_bytes"]) for r in _group_calls(rows)]

    assert key(rank0) == key(rank1)


def _after(rows: list[dict], row: dict, count: int) -> list[dict]:
    return rows[row["seq"] + 1 : row["seq"] + 1 + count]


def test_sync_collective_makes_the_current_stream_wait_at_once(rank0):
    first = _group_calls(rank0)[0]
    assert first["async_op"] is False
    before = rank0[first["seq"] - 2 : first["seq"]]
    # syncStream: the NCCL stream waits for the work queued on the current stream.
    assert [(r["kind"], r["stream"]) for r in before] == [("event_record", 0), ("stream_wait", first["stream"])]
    assert before[0]["event_id"] == before[1]["event_id"]
    done, wait = _after(rank0, first, 2)
    assert (done["kind"], done["op"], done["stream"]) == ("event_record", "nccl:done", first["stream"])
    assert (wait["kind"], wait["stream"], wait["event_id"]) == ("stream_wait", 0, done["event_id"])


def test_async_work_wait_makes_the_current_stream_wait_there(rank0):
    call = next(r for r in _group_calls(rank0) if r["message_bytes"] == 1000 * F32)
    assert call["async_op"] is True
    done = _after(rank0, call, 1)[0]
    waits = [r for r in rank0 if r["kind"] == "stream_wait" and r["event_id"] == done["event_id"]]
    assert len(waits) == 1 and waits[0]["stream"] == 0
    # The kernels issued between the call and work.wait() (torch.ones(3) * 7) come first.
    between = rank0[done["seq"] + 1 : waits[0]["seq"]]
    assert [r["op"] for r in between] == ["aten::ones", "aten::mul.Tensor"]
    assert rank0[waits[0]["seq"] + 1]["op"] == "aten::add_.Tensor"  # y.add_(1) reads the result after the wait


def test_work_wait_under_a_side_stream_makes_that_stream_wait(rank0):
    call = next(r for r in _group_calls(rank0) if r["message_bytes"] == 500 * F32)
    done = _after(rank0, call, 1)[0]
    wait = next(r for r in rank0 if r["kind"] == "stream_wait" and r["event_id"] == done["event_id"])
    mul = rank0[wait["seq"] + 1]
    assert mul["op"] == "aten::mul_.Tensor" and wait["stream"] == mul["stream"]
    assert wait["stream"] not in (0, call["stream"])


def _p2p(rows: list[dict]) -> list[tuple]:
    return [(r["op"], r["peer"], r["group_seq"], r["message_bytes"]) for r in _collectives(rows) if r["peer"] is not None]


def test_point_to_point_numbered_per_sender_and_receiver(rank0, rank1):
    msg = 16 * BF16
    assert _p2p(rank0) == [
        ("nccl:send", 1, 0, msg), ("nccl:send", 1, 1, msg),  # send, isend
        ("nccl:recv", 1, 0, msg), ("nccl:recv", 1, 1, msg),  # recv, irecv
        ("nccl:send", 1, 2, msg), ("nccl:recv", 1, 2, msg),  # batch_isend_irecv
    ]
    assert _p2p(rank1) == [
        ("nccl:recv", 0, 0, msg), ("nccl:recv", 0, 1, msg),
        ("nccl:send", 0, 0, msg), ("nccl:send", 0, 1, msg),
        ("nccl:send", 0, 2, msg), ("nccl:recv", 0, 2, msg),
    ]


def test_point_to_point_runs_on_a_stream_of_its_own(rank0):
    p2p_streams = {r["stream"] for r in _collectives(rank0) if r["peer"] is not None}
    group_streams = {r["stream"] for r in _group_calls(rank0)}
    assert len(p2p_streams) == 1 and p2p_streams.isdisjoint(group_streams | {0})


def test_batch_isend_irecv_posts_one_nccl_group(rank0):
    send, recv = [r for r in _collectives(rank0) if r["peer"] is not None][-2:]
    assert recv["seq"] == send["seq"] + 1 and send["stream"] == recv["stream"]
    done = _after(rank0, recv, 1)[0]
    assert (done["kind"], done["op"]) == ("event_record", "nccl:done")
    # Each of the two works waits for the one NCCL group.
    waits = [r for r in rank0 if r["kind"] == "stream_wait" and r["event_id"] == done["event_id"]]
    assert len(waits) == 2 and all(w["stream"] == 0 for w in waits)


def test_barrier_blocks_the_host(rank0):
    barrier = next(r for r in rank0 if r["op"] == "nccl:barrier")
    following = _after(rank0, barrier, 3)
    assert [r["op"] for r in following] == ["nccl:done", "cuda:synchronize", "nccl:wait"]
    assert following[1]["kind"] == "sync"


def test_functional_all_reduce_is_waited_when_read(rank0):
    call = _group_calls(rank0)[13]
    assert call["message_bytes"] == 8 * F32 and call["async_op"] is True
    done, wait, mul = _after(rank0, call, 3)
    assert (wait["kind"], wait["stream"], wait["event_id"]) == ("stream_wait", 0, done["event_id"])
    assert mul["op"] == "aten::mul.Tensor"  # reduced * 2 runs after the wait


def test_object_collectives_wait_and_copy_to_the_host(rank0):
    object_calls = _group_calls(rank0)[-OBJECT_CALLS:]
    assert all(r["async_op"] is False for r in object_calls)
    host_copies = [r for r in rank0 if r["op"] == "cuda:device_to_host"]
    assert len(host_copies) == 4  # one per object collective, after its last call
    assert all(host["seq"] > object_calls[0]["seq"] for host in host_copies)


def test_groups_from_new_group_split_group_and_device_mesh(emulate_rank_isolated):
    result = emulate_rank_isolated(SCRIPTS / "process_groups.py", [], rank=2, world_size=4)
    assert result.exit_code == 0, result.error
    # Every rank records every group, member or not, in creation order (c10d names them 0, 1, ...).
    assert result.groups == [
        ("0", (0, 1, 2, 3)),  # the world
        ("1", (0, 2)), ("2", (1, 3)),  # new_group x2
        ("3", (0, 1)), ("4", (2, 3)),  # split_group
        ("5", (0, 2)), ("6", (1, 3)),  # mesh dim "dp" of the (2, 2) mesh: same tp index
        ("7", (0, 1)), ("8", (2, 3)),  # mesh dim "tp"
    ]
    calls = [(r["group_name"], r["group_ranks"]) for r in result.table.to_pylist() if r["kind"] == "collective"]
    assert calls == [("1", [0, 2]), ("4", [2, 3]), ("8", [2, 3])]


def test_blocking_send_recv_are_recorded_as_not_async(rank0):
    # collectives.py, rank 0: dist.send, dist.isend, dist.recv, dist.irecv (then a batch_isend_irecv).
    p2p = [r for r in rank0 if r["op"] in ("nccl:send", "nccl:recv")][:4]
    assert [(r["op"], r["async_op"]) for r in p2p] == [
        ("nccl:send", False), ("nccl:send", True), ("nccl:recv", False), ("nccl:recv", True),
    ]


def test_an_object_list_reaches_the_rank_that_receives_it():
    sender = _emulate("object_p2p.py", [], rank=0, world_size=2)
    sends = [r for r in sender.table.to_pylist() if r["op"] == "nccl:send"]
    assert [r["peer"] for r in sends] == [1, 1] and sends[0]["message_bytes"] == 2 * 8
    assert len(sender.sent_objects) == 1 and sender.sent_objects[0].src == 0
    alone = emulate_rank(str(SCRIPTS / "object_p2p.py"), [], "h200", 1, 2, 2)  # before rank 0's emulation
    assert alone.exit_code != 0 and alone.waiting_for == 0 and "ObjectNotSentYet" in alone.error
    receiver = emulate_rank(str(SCRIPTS / "object_p2p.py"), [], "h200", 1, 2, 2, objects=sender.sent_objects)
    assert receiver.exit_code == 0, receiver.error
    rows = receiver.table.to_pylist()
    recvs = [r for r in rows if r["op"] == "nccl:recv"]
    assert [r["peer"] for r in recvs] == [0, 0]
    assert [r["message_bytes"] for r in recvs] == [2 * 8, sends[1]["message_bytes"]]
    relu = next(r for r in rows if r["op"] == "aten::relu_")
    assert relu["input_shapes"][0] == [4, 8]  # the shape rank 0 sent


@pytest.mark.parametrize("mode, named", [("--never", "never sent"), ("--cycle", "wait for each other")])
def test_a_receive_nobody_answers_fails_by_name(mode, named):
    from maya.world import RankFailedError, emulate_world

    with pytest.raises(RankFailedError, match=named) as caught:
        emulate_world(str(SCRIPTS / "object_p2p.py"), [mode], gpu="h200", world_size=2, local_world_size=2,
                      in_process=True)
    assert caught.value.result.rank == (1 if mode == "--never" else 0)


def test_patches_for_a_module_apply_when_it_is_imported(tmp_path, monkeypatch):
    import importlib
    import sys

    from maya.emulator.patcher import Patcher

    (tmp_path / "maya_fresh_module.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    patcher = Patcher()
    patcher.after_import("maya_fresh_module", lambda module: patcher.set(module, "VALUE", 2))
    module = importlib.import_module("maya_fresh_module")
    assert module.VALUE == 2
    patcher.restore()
    assert module.VALUE == 1 and not any(type(f).__name__ == "_AfterImport" for f in sys.meta_path)
    del sys.modules["maya_fresh_module"]


@pytest.mark.parametrize("rank", [0, 1])
def test_collectives_keep_the_values_ranks_agree_on_and_the_roots_own(rank):
    _emulate("collective_values.py", [], rank=rank, world_size=2)  # the script asserts what each rank reads


def test_fake_backend_subgroups_communicate_nothing_and_dtensor_random_init_runs(emulate_rank_isolated):
    # torchtitan gives its device mesh's unused dimensions backend "fake" (new_group had refused any
    # backend but NCCL and gloo), and torch 2.13's DTensor runs a random op through the higher-order
    # operator run_dtensor_rng_op, which the recorder had no rule for. The script asserts that
    # get_backend names each group's backend, and sets the groups' timeouts (torch's _set_pg_timeout
    # had failed: an emulated group has no C++ NCCL backend).
    result = emulate_rank_isolated(SCRIPTS / "fake_subgroups.py", [], rank=0, world_size=2)
    assert result.exit_code == 0, result.error
    rows = result.table.to_pylist()
    calls = [(r["op"], r["group_seq"]) for r in rows if r["kind"] == "collective"]
    # distribute_tensor's scatter, then per step full_tensor's all-gather and the dp all-reduce; none
    # of the fake groups' all-reduces and barriers.
    assert calls == [("nccl:scatter", 0), ("nccl:all_gather", 1), ("nccl:all_reduce", 2),
                     ("nccl:all_gather", 3), ("nccl:all_reduce", 4)]
    assert sum(r["op"] == "aten::normal_" for r in rows) == 1


def test_a_fake_default_group_is_refused(tmp_path):
    script = tmp_path / "fake_world.py"
    script.write_text("import torch.distributed as dist\ndist.init_process_group('fake')\n")
    result = emulate_rank(str(script), [], "h200", 0, 2, 2)
    assert result.exit_code != 0 and "init_process_group(backend='fake')" in result.error


def test_a_broadcast_carries_the_values_the_root_knows():
    # Rank 1 starts from zeros; before, it kept them (and skipped the GEMM), now it reads rank 0's flags.
    from maya.world import emulate_world

    world = emulate_world(str(SCRIPTS / "broadcast_flags.py"), [], gpu="h200", world_size=2, local_world_size=2,
                          in_process=True)  # rank 0 first, then rank 1 as the probe of the world group
    for rank in (0, 1):
        ops = [r["op"] for r in world.results[rank].table.to_pylist()]
        assert "aten::mm" in ops and "aten::sigmoid" in ops and "aten::relu" not in ops, (rank, ops)
    alone = emulate_rank(str(SCRIPTS / "broadcast_flags.py"), [], "h200", 1, 2, 2)  # no root emulated before it
    assert "aten::mm" not in [r["op"] for r in alone.table.to_pylist()]  # its own zeros, as before
    every = emulate_world(str(SCRIPTS / "broadcast_flags.py"), [], gpu="h200", world_size=2, local_world_size=2,
                          in_process=True, dedup=False)  # rank 0 first here too
    assert "aten::mm" in [r["op"] for r in every.results[1].table.to_pylist()]
