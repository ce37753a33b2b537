"""`EmulatedProcessGroup`: Maya's fake NCCL process group, a Python `torch.distributed.ProcessGroup`.

Under emulation `dist.init_process_group("nccl")` (or an omitted backend, or "cuda:nccl,cpu:gloo")
creates one of these. Every call returns at once with its outputs untouched (fake tensors have no
data, and their shapes are already right) and is recorded by `NcclRuntime` with its group, ranks,
op, size, reduce op, per-group sequence number and stream. C++ callers such as the DDP reducer reach
it through PyTorch's Python process-group trampoline (torch/csrc/distributed/c10d/PyProcessGroup.hpp).

Groups: `new_group` is delegated here by c10d on every rank, member or not, so each rank records
the whole table of groups the script creates (`EmulationState.groups`); Maya's rank deduplication
reads it. A subgroup created with backend "fake" (DeviceMesh's `backend_override` for the mesh
dimensions a job does not use, as torchtitan does) is a `fake` group: like torch's FakeProcessGroup it
communicates nothing, so its calls complete at once and are not recorded.
"""

from __future__ import annotations

from datetime import timedelta

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import Work

from maya.emulator import state as st
from maya.emulator.nccl import BARRIER_BYTES, CommCall, NcclRuntime

BACKEND_NAME = "maya"
"""Name the backend is registered under in `torch.distributed.Backend`."""


def nbytes(tensors) -> int:
    """Total bytes of a list of tensors."""
    return sum(t.numel() * t.element_size() for t in tensors)


def _async(opts: object) -> bool:
    """`opts.asyncOp`: whether the caller asked for async_op=True (c10d sets it on every options object)."""
    return bool(getattr(opts, "asyncOp", True))


def _reduce_name(op: object) -> str:
    for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"):
        if op == getattr(dist.ReduceOp, name):
            return name.lower()
    return str(op)


class EmulatedWork(Work):
    """A `Work` whose `wait()` makes the current stream wait for its NCCL call, as ProcessGroupNCCL's does."""

    def __init__(self, runtime: NcclRuntime, event_id: int, result: list[torch.Tensor]) -> None:
        super().__init__()
        self._runtime = runtime
        self._event_id = event_id
        self._result = result

    def wait(self, timeout: timedelta | None = None) -> bool:
        self._runtime.wait(self._event_id)
        return True

    def synchronize(self) -> None:
        self._runtime.wait(self._event_id)

    def is_completed(self) -> bool:
        return True

    def is_success(self) -> bool:
        return True

    def exception(self) -> None:
        return None

    def result(self) -> list[torch.Tensor]:
        return self._result

    def get_future(self) -> torch.futures.Future:
        future: torch.futures.Future = torch.futures.Future()
        future.set_result(self._result)
        return future


class EmulatedProcessGroup(dist.ProcessGroup):
    """One process group of the emulated world, seen from this rank."""

    def __init__(self, group_rank: int, ranks: tuple[int, ...], group_name: str) -> None:
        super().__init__(group_rank, len(ranks))
        self.global_ranks = ranks
        self._group_name = group_name
        self._group_desc = ""
        self.fake = False
        """True for a group created with backend "fake": its calls communicate nothing and cost nothing."""

    # -- identity ----------------------------------------------------------------------------------

    def getBackendName(self) -> str:
        return "fake" if self.fake else "nccl"

    @property
    def _device_types(self) -> list[torch.device]:
        """The devices of the group's backends, as an NCCL group reports them; c10d's own lookup of a
        group's device (`_get_pg_default_device`: FSDP1's sharded state dict, torch.distributed's
        ShardedTensor) found none ("no backend has been registered with this ProcessGroup")."""
        return [torch.device("cuda")]

    def getGroupName(self) -> str:
        return self._group_name

    def setGroupName(self, name: str) -> None:
        self._group_name = name

    def getGroupDesc(self) -> str:
        return self._group_desc

    def setGroupDesc(self, desc: str) -> None:
        self._group_desc = desc

    @property
    def _runtime(self) -> NcclRuntime:
        return st.active().nccl

    def new_group(self, ranks, timeout=None, pg_options=None, group_name=None, group_desc=None, **_):
        """c10d delegates every `new_group` call here, on members and non-members alike.

        Keywords other torch versions pass (2.14 adds `backend`) do not change an emulated group."""
        ranks = tuple(int(r) for r in ranks)
        state = st.active()
        state.groups.append((str(group_name), ranks))
        me = state.config.rank
        if me not in ranks:
            return None
        pg = EmulatedProcessGroup(ranks.index(me), ranks, str(group_name))
        if group_desc:
            pg._group_desc = group_desc
        return pg

    # -- helpers -----------------------------------------------------------------------------------

    def _issue(self, op: str, *, message_bytes: int, inputs=(), outputs=(), reduce_op=None, peer=None, root=None,
               async_op: bool = True, result=None) -> EmulatedWork:
        runtime = self._runtime
        if self.fake:
            return EmulatedWork(runtime, -1, list(result if result is not None else outputs))
        call = CommCall(
            op=op, group_name=self._group_name, group_ranks=self.global_ranks, message_bytes=message_bytes,
            inputs=tuple(inputs), outputs=tuple(outputs), reduce_op=reduce_op, peer=peer, root=root,
        )
        event = runtime.issue(call, async_op=async_op)
        return EmulatedWork(runtime, event, list(result if result is not None else outputs))

    def _global(self, group_rank: int) -> int:
        return self.global_ranks[group_rank]

    # -- collectives -------------------------------------------------------------------------------

    def allreduce(self, tensors, opts=None):
        reduce_op = _reduce_name(opts.reduceOp) if opts is not None else "sum"
        return self._issue("all_reduce", message_bytes=nbytes(tensors), inputs=tensors, outputs=tensors, reduce_op=reduce_op, async_op=_async(opts))

    def allreduce_coalesced(self, tensors, opts=None):
        return self.allreduce(tensors, opts)

    def broadcast(self, tensors, opts=None):
        root = self._global(opts.rootRank if opts is not None else 0)
        return self._issue("broadcast", message_bytes=nbytes(tensors), inputs=tensors, outputs=tensors, root=root, async_op=_async(opts))

    def reduce(self, tensors, opts=None):
        root = self._global(opts.rootRank if opts is not None else 0)
        reduce_op = _reduce_name(opts.reduceOp) if opts is not None else "sum"
        return self._issue("reduce", message_bytes=nbytes(tensors), inputs=tensors, outputs=tensors, reduce_op=reduce_op, root=root, async_op=_async(opts))

    def allgather(self, output_lists, inputs, opts=None):
        outputs = [t for lst in output_lists for t in lst]
        return self._issue("all_gather", message_bytes=nbytes(outputs), inputs=inputs, outputs=outputs, result=outputs, async_op=_async(opts))

    def _allgather_base(self, output, input, opts=None):
        return self._issue("all_gather", message_bytes=nbytes([output]), inputs=[input], outputs=[output], async_op=_async(opts))

    all_gather_single = _allgather_base

    def allgather_coalesced(self, output_lists, inputs, opts=None):
        return self.allgather(output_lists, inputs, opts)

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        return self._issue("all_gather", message_bytes=nbytes(outputs), inputs=inputs, outputs=outputs, async_op=_async(opts))

    all_gather_single_coalesced = allgather_into_tensor_coalesced

    def reduce_scatter(self, outputs, input_lists, opts=None):
        inputs = [t for lst in input_lists for t in lst]
        reduce_op = _reduce_name(opts.reduceOp) if opts is not None else "sum"
        return self._issue("reduce_scatter", message_bytes=nbytes(inputs), inputs=inputs, outputs=outputs, reduce_op=reduce_op, async_op=_async(opts))

    def _reduce_scatter_base(self, output, input, opts=None):
        reduce_op = _reduce_name(opts.reduceOp) if opts is not None else "sum"
        return self._issue("reduce_scatter", message_bytes=nbytes([input]), inputs=[input], outputs=[output], reduce_op=reduce_op, async_op=_async(opts))

    reduce_scatter_single = _reduce_scatter_base

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts=None):
        reduce_op = _reduce_name(opts.reduceOp) if opts is not None else "sum"
        return self._issue("reduce_scatter", message_bytes=nbytes(inputs), inputs=inputs, outputs=outputs, reduce_op=reduce_op, async_op=_async(opts))

    reduce_scatter_single_coalesced = reduce_scatter_tensor_coalesced

    def alltoall(self, outputs, inputs, opts=None):
        return self._issue("all_to_all", message_bytes=nbytes(inputs), inputs=inputs, outputs=outputs, async_op=_async(opts))

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        return self._issue("all_to_all", message_bytes=nbytes([input]), inputs=[input], outputs=[output], async_op=_async(opts))

    all_to_all_single = alltoall_base

    def gather(self, output_lists, inputs, opts=None):
        root = self._global(opts.rootRank if opts is not None else 0)
        outputs = [t for lst in output_lists for t in lst]
        return self._issue("gather", message_bytes=nbytes(inputs) * self.size(), inputs=inputs, outputs=outputs, root=root, async_op=_async(opts))

    def scatter(self, outputs, input_lists, opts=None):
        root = self._global(opts.rootRank if opts is not None else 0)
        return self._issue("scatter", message_bytes=nbytes(outputs) * self.size(), inputs=[t for lst in input_lists for t in lst], outputs=outputs, root=root, async_op=_async(opts))

    def send(self, tensors, dst, tag=0):
        return self._issue("send", message_bytes=nbytes(tensors), inputs=tensors, peer=self._global(dst), result=tensors,
                           async_op=not self._runtime.blocking_p2p)

    def recv(self, tensors, src, tag=0):
        return self._issue("recv", message_bytes=nbytes(tensors), outputs=tensors, peer=self._global(src),
                           async_op=not self._runtime.blocking_p2p)

    def recv_anysource(self, tensors, tag=0):
        raise NotImplementedError(
            "recv from any source (dist.recv without src) is not supported under emulation: the sender is only "
            "known at run time; pass src="
        )

    def barrier(self, opts=None):
        work = self._issue("barrier", message_bytes=BARRIER_BYTES, result=[], async_op=_async(opts))
        if not self.fake:
            self._runtime.barrier_sync()
        return work

    def monitored_barrier(self, opts=None):
        return self.barrier(opts)

    # -- coalescing (batch_isend_irecv, _coalescing_manager) -----------------------------------------

    def start_coalescing(self, device=None) -> None:
        self._runtime.start_batch(self._group_name)

    def end_coalescing(self, device=None) -> EmulatedWork:
        runtime = self._runtime
        return EmulatedWork(runtime, runtime.end_batch(self._group_name), [])

    _start_coalescing = start_coalescing
    _end_coalescing = end_coalescing


def _create(options, backend_options) -> EmulatedProcessGroup:
    """Backend creator for `init_process_group` (c10d's extended API)."""
    ranks = tuple(int(r) for r in (options.global_ranks_in_group or range(options.group_size)))
    state = st.active()
    state.groups.append((str(options.group_id), ranks))
    return EmulatedProcessGroup(int(options.group_rank), ranks, str(options.group_id))


def register_backend() -> None:
    """Register the `maya` backend with torch.distributed (once per process)."""
    if BACKEND_NAME.upper() in dist.Backend._plugins:
        return
    dist.Backend.register_backend(BACKEND_NAME, _create, extended_api=True, devices=["cpu", "cuda"])
