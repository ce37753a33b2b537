"""`install_distributed`: torch.distributed under emulation uses Maya's fake NCCL process group.

- `init_process_group` with "nccl", no backend, or "cuda:nccl,cpu:gloo" creates an
  `EmulatedProcessGroup` with this rank's RANK and WORLD_SIZE; no rendezvous happens (an in-process
  store replaces TCP), so `init_method` and `MASTER_ADDR` are accepted and ignored.
- `new_group(backend=...)` and `split_group` create emulated groups; `get_backend` answers "nccl".
  A `new_group(backend="fake")` (DeviceMesh's `backend_override` for mesh dimensions a job leaves
  unused: torchtitan's degree-1 dimensions) is an emulated group that communicates nothing, as torch's
  FakeProcessGroup does on GPUs; `get_backend` answers "fake". A default group of backend "fake" (a
  dry run that never communicates) is refused.
- Object collectives (`all_gather_object`, `broadcast_object_list`, ...) return what a symmetric
  program would see: every rank's object equals this rank's (pickled and unpickled, as NCCL would
  carry it), and a broadcast list keeps this rank's values. Their NCCL calls and the host sync are
  recorded, each object's pickle as `OBJECT_BYTES`.
- DDP's cross-rank parameter-shape check, which reads tensor data, is skipped: every emulated rank
  runs the same program.
"""

from __future__ import annotations

import pickle

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

from maya.emulator import state as st
from maya.emulator.events import EventKind
from maya.emulator.patcher import Patcher
from maya.emulator.process_group import BACKEND_NAME, EmulatedProcessGroup, EmulatedWork, nbytes, register_backend

_SIZE_BYTES = 8
"""Object collectives first exchange each object's pickled size as one int64."""
OBJECT_BYTES = 1024
"""Bytes an object's pickle is recorded with. Its real size depends on data that other ranks never
see (a broadcast's non-source ranks pass placeholders; all_gather pads to the largest rank's), and
every rank must record the same call, so each object counts as 1 KiB (a small config or metric)."""


def install_distributed(patcher: Patcher) -> None:
    """Patch torch.distributed for one emulation; `patcher.restore()` tears the groups down."""
    register_backend()
    original_init = c10d.init_process_group
    original_new_group = c10d.new_group

    def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                           group_name="", pg_options=None, device_id=None, **kwargs):
        config = st.active().config
        if backend is not None and str(backend).lower() == "fake":
            raise ValueError(
                "init_process_group(backend='fake'): a fake default group communicates nothing (a dry run, "
                "such as torchtitan's --comm.mode fake_backend); Maya emulates NCCL, so launch the script as "
                "it runs on GPUs (backend nccl) and Maya's emulated NCCL records its collectives"
            )
        _check_backend(backend)
        if world_size not in (-1, config.world_size) or rank not in (-1, config.rank):
            raise ValueError(
                f"init_process_group(rank={rank}, world_size={world_size}) does not match the emulated launch "
                f"(RANK={config.rank}, WORLD_SIZE={config.world_size})"
            )
        kwargs = {"timeout": timeout} if timeout is not None else {}
        return original_init(
            backend=BACKEND_NAME, store=dist.HashStore(), rank=config.rank, world_size=config.world_size,
            group_name=group_name, **kwargs,
        )

    def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
                  group_desc=None, device_id=None):
        _check_backend(backend)
        group = original_new_group(
            ranks=ranks, timeout=timeout, use_local_synchronization=use_local_synchronization, group_desc=group_desc,
        )
        if isinstance(group, EmulatedProcessGroup) and str(backend).lower() == "fake":
            group.fake = True
        return group

    def split_group(parent_pg=None, split_ranks=None, timeout=None, pg_options=None, group_desc=None, backend=None):
        """Every split becomes a `new_group` of its global ranks; returns the one holding this rank."""
        parent = parent_pg or c10d._get_default_group()
        parent_ranks = dist.get_process_group_ranks(parent)
        mine = None
        for split in split_ranks or []:
            group = new_group([parent_ranks[r] for r in split], timeout=timeout, group_desc=group_desc)
            if group is not None and group != dist.GroupMember.NON_GROUP_MEMBER:
                mine = group
        return mine

    original_get_backend = c10d.get_backend

    def get_backend(group=None):
        if isinstance(group, EmulatedProcessGroup) and group.fake:
            return "fake"
        name = original_get_backend(group)
        return "nccl" if str(name) == BACKEND_NAME else name

    replacements = {
        "init_process_group": init_process_group,
        "new_group": new_group,
        "split_group": split_group,
        "get_backend": get_backend,
        "is_nccl_available": lambda: True,
        "all_gather_object": all_gather_object,
        "broadcast_object_list": broadcast_object_list,
        "gather_object": gather_object,
        "scatter_object_list": scatter_object_list,
        "send_object_list": send_object_list,
        "recv_object_list": recv_object_list,
        "_set_pg_timeout": set_timeout,
    }
    if hasattr(c10d, "set_timeout"):  # torch 2.14's public name
        replacements["set_timeout"] = set_timeout
    import torch.distributed.device_mesh as device_mesh

    for name, fn in replacements.items():
        patcher.set(c10d, name, fn)
        patcher.set(dist, name, fn)
        if hasattr(device_mesh, name):
            patcher.set(device_mesh, name, fn)
    patcher.after_import("torch.distributed.pipelining.schedules", lambda module: _own_pipeline_vote(patcher, module))
    patcher.after_import("torch.distributed.optim.zero_redundancy_optimizer",
                         lambda module: _refuse_zero_state_receipt(patcher, module))

    def batch_isend_irecv(p2p_op_list):
        """ProcessGroupNCCL posts the list as one NCCL group; every returned work waits for all of it."""
        group = _group(p2p_op_list[0].group if p2p_op_list else None)
        runtime = st.active().nccl
        runtime.start_batch(group.group_name)
        try:
            # torch's own loop, without its coalescing check: from torch 2.14 that asks the group for
            # a C++ backend, which an emulated group does not have.
            c10d._check_p2p_op_list(p2p_op_list)
            works = []
            for p2p in p2p_op_list:
                peer = {"group_dst" if p2p.op is c10d.isend else "group_src": p2p.group_peer}
                work = p2p.op(p2p.tensor, group=p2p.group, tag=p2p.tag, **peer)
                if work:
                    works.append(work)
        finally:
            event = runtime.end_batch(group.group_name)
        return [EmulatedWork(runtime, event, []) for _ in works]

    patcher.set(c10d, "batch_isend_irecv", batch_isend_irecv)
    for name in ("send", "recv"):  # the process group cannot tell dist.send from dist.isend
        patcher.set(c10d, name, _blocking(getattr(c10d, name)))
        patcher.set(dist, name, getattr(c10d, name))
    patcher.set(dist, "batch_isend_irecv", batch_isend_irecv)
    _patch_ddp_buckets(patcher)
    _patch_framework_host_rows(patcher)
    import torch.nn.parallel.distributed as ddp

    patcher.set(ddp, "_verify_param_shape_across_processes", lambda *args, **kwargs: None)
    patcher.add_cleanup(_destroy_groups)


def _patch_ddp_buckets(patcher: Patcher) -> None:
    """Give DDP, from its first iteration, the buckets it would rebuild after it.

    DDP starts with one bucket holding every gradient, then after the first iteration rebuilds its
    buckets in the order gradients became ready (a 1 MiB first bucket, then `bucket_cap_mb`),
    agreeing on that order across ranks through tensor data, which fake tensors do not have. The
    emulation builds the rebuilt buckets up front, taking the ready order to be the reverse of
    parameter registration (the backward order of a model whose modules run in the order they are
    defined), and skips the rebuild.
    """
    import torch.nn.parallel.distributed as ddp

    original_assign = dist._compute_bucket_assignment_by_size

    def limits(self, static_graph, find_unused_parameters):
        if self.has_custom_per_bucket_caps:
            caps = list(self.per_bucket_bytes_caps)
            return caps, caps
        if self.first_bucket_bytes_cap < self.bucket_bytes_cap:
            return [self.first_bucket_bytes_cap, self.bucket_bytes_cap], []
        return [self.bucket_bytes_cap], []

    def assign_in_ready_order(tensors, size_limits, expect_sparse_gradient=(), tensor_indices=()):
        order = list(reversed(range(len(tensors))))
        sparse = [expect_sparse_gradient[i] for i in order] if expect_sparse_gradient else []
        buckets, caps = original_assign([tensors[i] for i in order], size_limits, sparse)
        # DDP reverses the list it gets back, which puts the first-ready bucket first again.
        return [[order[j] for j in b] for b in reversed(buckets)], list(reversed(caps))

    config = getattr(ddp, "_BucketCapacityConfig", None)  # torch >= 2.12; older releases bucket in one go
    if config is not None:
        patcher.set(config, "compute_bucket_size_limits", limits)
    patcher.set(dist, "_compute_bucket_assignment_by_size", assign_in_ready_order)
    patcher.set(dist.Reducer, "_rebuild_buckets", lambda self: False)


def _blocking(p2p):
    """`dist.send` / `dist.recv`: their calls are recorded with async_op=False."""

    def call(*args, **kwargs):
        runtime = st.active().nccl
        runtime.blocking_p2p += 1
        try:
            return p2p(*args, **kwargs)
        finally:
            runtime.blocking_p2p -= 1

    return call


def _patch_framework_host_rows(patcher: Patcher) -> None:
    """Host rows for the Python/C++ framework work that no GPU op accounts for, charged by
    framework_overhead.py's figures (`ops` = the parameters involved):
    - `fsdp:unit` each time an FSDP2 unit starts its forward (its forward and backward hooks);
    - `ddp:step` at each DDP forward (the C++ reducer's hooks and bucket work in the backward)."""
    from torch.distributed.fsdp._fully_shard._fsdp_param_group import FSDPParamGroup
    from torch.nn.parallel import DistributedDataParallel

    _host_row_before(patcher, FSDPParamGroup, "pre_forward", "fsdp:unit", lambda group: len(group.fsdp_params))
    _host_row_before(
        patcher, DistributedDataParallel, "forward", "ddp:step",
        lambda ddp: sum(1 for p in ddp.module.parameters() if p.requires_grad),
    )
    # DDP's logger times its first iterations' forward and backward with timers of its parameters'
    # device; the emulated parameters' storage is on no device it times, so it only printed a C++
    # warning ("Time stats are currently only collected for CPU and CUDA devices") into every DDP
    # run's output. Its statistics are logging data that nothing computes with: none are collected.
    patcher.set(torch._C._distributed_c10d.Logger, "set_runtime_stats_and_log", lambda logger: None)


def _host_row_before(patcher: Patcher, owner: type, method: str, op: str, count) -> None:
    """Wrap `owner.method` to add a host row `op` with attrs {"ops": count(self)} before it runs."""
    original = getattr(owner, method)

    def wrapper(self, *args, **kwargs):
        state = st.active()
        phase, module = state.nccl.tracker.current()
        state.add_row(EventKind.HOST, op, phase=phase, module=module, attrs={"ops": count(self)})
        return original(self, *args, **kwargs)

    patcher.set(owner, method, wrapper)


def _check_backend(backend: object) -> None:
    if backend is None:
        return
    text = str(backend).lower()
    names = {part.split(":")[-1] for part in text.split(",")}
    unknown = names - {"nccl", "gloo", "fake", BACKEND_NAME, "cuda:nccl", "cpu:gloo"}
    if unknown:
        raise ValueError(
            f"backend {backend!r}: Maya emulates NCCL (and accepts gloo for CPU tensors); "
            f"{sorted(unknown)} cannot be emulated"
        )


def set_timeout(timeout, group=None) -> None:
    """`torch.distributed._set_pg_timeout` (torchtitan shortens its groups' timeouts after the first
    step): checked as torch checks it, then nothing, as no emulated call waits for another rank. torch's
    own asks the group for its C++ NCCL backend, which an emulated group does not have ("No backend
    type associated with device type cuda")."""
    if _group(group) is None:
        raise ValueError("Invalid process group specified")


def _destroy_groups() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()


def _group(group) -> EmulatedProcessGroup | None:
    """The emulated group of an object collective, or None when this rank is not a member."""
    if group is None:
        group = c10d._get_default_group()
    if group == dist.GroupMember.NON_GROUP_MEMBER:
        return None
    return group


def _record_object_calls(group: EmulatedProcessGroup, calls: list[tuple[str, int]]) -> None:
    """The NCCL calls an object collective makes, as (op, message bytes), then its host copy.

    The calls follow torch.distributed.distributed_c10d: each object travels as its pickle in a
    uint8 tensor (`OBJECT_BYTES` here), preceded by an exchange of the pickles' sizes as int64s.
    """
    for op, message_bytes in calls:
        group._issue(op, message_bytes=message_bytes, async_op=False).wait()
    st.active().add_row(EventKind.SYNC, "cuda:device_to_host")


def all_gather_object(object_list, obj, group=None):
    """all_gather of the sizes, then of every rank's pickle padded to the largest."""
    pg = _group(group)
    if pg is None:
        return
    payload = pickle.dumps(obj)
    size = pg.size()
    _record_object_calls(pg, [("all_gather", _SIZE_BYTES * size), ("all_gather", OBJECT_BYTES * size)])
    for i in range(size):
        object_list[i] = pickle.loads(payload)


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """broadcast of one size per object, then of the objects' pickles back to back."""
    pg = _group(group)
    if pg is None:
        return
    n = len(object_list)
    _record_object_calls(pg, [("broadcast", _SIZE_BYTES * n), ("broadcast", OBJECT_BYTES * n)])


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """all_gather of the sizes, then a gather of every rank's padded pickle to the destination."""
    pg = _group(group)
    if pg is None:
        return
    payload = pickle.dumps(obj)
    size = pg.size()
    _record_object_calls(pg, [("all_gather", _SIZE_BYTES * size), ("gather", OBJECT_BYTES * size)])
    if object_gather_list is not None:
        for i in range(size):
            object_gather_list[i] = pickle.loads(payload)


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None, group=None, group_src=None):
    """broadcast of the largest pickle's size, scatter of the padded pickles, scatter of their sizes."""
    pg = _group(group)
    if pg is None:
        return
    size = pg.size()
    _record_object_calls(
        pg, [("broadcast", _SIZE_BYTES), ("scatter", OBJECT_BYTES * size), ("scatter", _SIZE_BYTES * size)]
    )
    if scatter_object_input_list is not None:
        scatter_object_output_list[0] = scatter_object_input_list[pg.rank()]


def _own_pipeline_vote(patcher: Patcher, module) -> None:
    """torch.distributed.pipelining (2.13 on) settles whether every stage was built with example inputs
    and outputs (static shapes) by a vote: a product of 0/1 tensors passed from the first stage to the
    last and back. The vote's received values come from other ranks, which this emulation does not
    know, so each stage's mode is this rank's own stages' vote: the pipeline's stages are taken to be
    built alike (all with example tensors, or all without). A stage without them (dynamic mode)
    learns its shapes through object lists, which `recv_object_list` carries between emulations;
    stages built unlike each other would then wait for metadata their peers never send, which the
    world emulator names."""
    cls = getattr(module, "_PipelineSchedule", None)
    original = getattr(cls, "_warmup_p2p", None)
    if original is None:
        return
    from torch.distributed.pipelining._utils import InferenceMode
    from torch.distributed.pipelining.stage import PipelineStage

    def _warmup_p2p(self, stages, has_backward, p2p_done):
        original(self, stages, has_backward, p2p_done)  # its sends and receives are recorded
        if all(isinstance(stage, PipelineStage) for stage in stages):
            dynamic = any(InferenceMode.needs_dynamic(stage._user_meta, has_backward) for stage in stages)
            for stage in stages:
                stage._inference_mode = InferenceMode.DYNAMIC if dynamic else InferenceMode.STATIC

    patcher.set(cls, "_warmup_p2p", _warmup_p2p)


def _refuse_zero_state_receipt(patcher: Patcher, module) -> None:
    """`ZeroRedundancyOptimizer.consolidate_state_dict(to=r)`: rank r receives every other rank's shard
    of the optimizer state as a pickle broadcast from that rank (`_broadcast_object`), which this rank's
    emulation cannot know; unpickling the unknown bytes failed with "invalid load key". Refused by name
    on the receiving rank; the sending ranks record their broadcasts as before. Training steps with
    the optimizer are unaffected."""
    original = getattr(module, "_broadcast_object", None)
    if original is None:
        return

    def _broadcast_object(obj, src_rank, group=None, device=torch.device("cpu")):
        if dist.get_rank() != src_rank:
            raise NotImplementedError(
                f"ZeroRedundancyOptimizer.consolidate_state_dict cannot be emulated on the rank that collects: "
                f"rank {src_rank}'s optimizer state is sent as an object, and every rank is emulated on its own. "
                "The training steps before it are kept; a script can save each rank's own shard instead "
                "(`optimizer.optim.state_dict()`)")
        return original(obj, src_rank, group=dist.group.WORLD if group is None else group, device=device)

    patcher.set(module, "_broadcast_object", _broadcast_object)


def send_object_list(object_list, dst=None, group=None, device=None, group_dst=None, use_batch=False):
    """send of one size per object, then of the objects' pickles back to back; the pickles go to the
    world's mailbox (`maya.emulator.object_mailbox`)."""
    pg = _group(group)
    if pg is None:
        return
    peer = dst if dst is not None else pg._global(group_dst)
    pickles = tuple(pickle.dumps(obj) for obj in object_list)
    for message_bytes in (_SIZE_BYTES * len(object_list), sum(map(len, pickles))):
        pg._issue("send", message_bytes=message_bytes, peer=peer, async_op=False).wait()
    st.active().mailbox.send(pg.global_ranks, pg._global(pg.rank()), peer, pickles)


def recv_object_list(object_list, src=None, group=None, device=None, group_src=None, use_batch=False):
    """The objects the sender's emulation sent (`maya.emulator.object_mailbox`; `ObjectNotSentYet`
    while it has not run): recv of the sizes, the host's read of their sum, recv of the pickles."""
    pg = _group(group)
    if pg is None:
        return -1
    peer = src if src is not None else pg._global(group_src)
    pickles = st.active().mailbox.receive(pg.global_ranks, peer, pg._global(pg.rank()))
    if len(pickles) != len(object_list):
        raise RuntimeError(f"recv_object_list of {len(object_list)} object(s) from rank {peer}, which sent "
                           f"{len(pickles)}")
    pg._issue("recv", message_bytes=_SIZE_BYTES * len(object_list), peer=peer, async_op=False).wait()
    st.active().add_row(EventKind.SYNC, "cuda:device_to_host")
    pg._issue("recv", message_bytes=sum(map(len, pickles)), peer=peer, async_op=False).wait()
    object_list[:] = [pickle.loads(p) for p in pickles]
    return peer


COLLECTIVE_NAMESPACES = frozenset({"_c10d_functional", "_c10d_functional_autograd", "_dtensor"})
"""Op namespaces of the functional collectives (DTensor, FSDP2 internals, torch.compile's)."""


def record_functional_collective(func, args: tuple, kwargs: dict, out) -> None:
    """Record one functional collective op (`torch.ops._c10d_functional.*`) that fake mode just ran."""
    name = func._schema.name.split("::")[-1]
    if name == "wait_tensor":
        st.active().nccl.wait_for_tensors([args[0]])
        return
    if name == "_wrap_tensor_autograd":
        return
    bound = _bind(func, args, kwargs)
    group: EmulatedProcessGroup = c10d._resolve_process_group(bound["group_name"])
    outputs = list(out) if isinstance(out, (list, tuple)) else [out]
    inputs = bound.get("inputs") or ([bound["input"]] if "input" in bound else [bound.get("tensor")])
    inputs = [t for t in inputs if isinstance(t, torch.Tensor)]
    base = name.rstrip("_").replace("_coalesced", "").replace("_out", "")
    reduce_op = bound.get("reduce_op")
    peer = root = None
    if base in ("all_reduce", "broadcast"):
        message = nbytes(inputs)
        if base == "broadcast":
            root = int(bound["src"])
    elif base == "all_gather_into_tensor":
        base, message = "all_gather", nbytes(outputs)
    elif base == "reduce_scatter_tensor":
        base, message = "reduce_scatter", nbytes(inputs)
    elif base in ("all_to_all_single", "shard_dim_alltoall"):
        base, message = "all_to_all", nbytes(inputs)
    elif base in ("isend", "irecv"):
        peer = int(bound["dst"] if base == "isend" else bound["src"])
        base, message = ("send" if base == "isend" else "recv"), nbytes(inputs)
    else:
        raise NotImplementedError(f"functional collective {func} is not emulated")
    group._issue(base, message_bytes=message, inputs=inputs, outputs=outputs, reduce_op=reduce_op, peer=peer,
                 root=root, async_op=True)


def _bind(func, args: tuple, kwargs: dict) -> dict:
    names = [a.name for a in func._schema.arguments]
    bound = dict(zip(names, args))
    bound.update(kwargs)
    return bound
