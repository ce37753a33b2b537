"""`Recorder`: the TorchDispatchMode that records every GPU operation and tracks its memory.

It sits above `EmulatorFakeMode`, so it sees each aten op once, after autograd, with fake inputs.
For each op it: translates `cuda` device arguments to the proxy device; answers data-dependent
reads (`item()`) with placeholders; runs the op in the fake mode; gives new output storages to the
emulated caching allocator (and frees them when the storage dies); and appends a trace row.

Placeholder values (documented in docs/emulation.md): `.item()` of a floating-point GPU tensor is 0.0,
of an integer tensor 1, of a boolean tensor False, except the result of an `all` reduction, which
is True ("nothing is wrong": `isfinite(x).all()` holds, `isnan(x).any()` does not, and an attention
mask of all ones is recognised as no mask); data-dependent shapes (`nonzero`, `masked_select`,
boolean indexing, `bincount`) follow the uniform-routing hints of `ValueHints` (indices from
`topk`/`argmax`/`sort` spread evenly, so `nonzero(indices == e)` selects 1/C of them) and select
every element where there is no hint. A data-dependent shape on the GPU synchronises the host with
the device (the size is copied back before the output can be allocated): a sync row follows it.
The sizes such ops chose are followed through the ops that inherit them (`_carry_data_dependent`):
a kernel row with an input of such a size has `"data_dependent_shape": true` in its attrs, as on a GPU
its shape would change from step to step (each expert's tokens in a mixture-of-experts layer). A GEMM,
convolution or cuDNN attention row on a shape the process had not run has `"new_shape"` naming the
host figure it pays for cuBLAS's kernel lookup or cuDNN's plan (`maya.emulator.shape_caches`).
"""

from __future__ import annotations

import contextlib
import functools
import weakref

import torch
from torch._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    FakeTensor,
    UnsupportedOperatorException,
    unset_fake_temporarily,
)
from torch.utils._python_dispatch import TorchDispatchMode

from maya.emulator.allocator import EmulatedOutOfMemory
from maya.emulator.attrs import (
    CUDNN_BENCHMARK,
    CUDNN_BENCHMARK_OPS,
    DATA_DEPENDENT_SHAPE,
    INTERNAL_LAUNCH,
    NEW_SHAPE,
    encode_call,
    flatten_tensors,
    tensor_meta,
)
from maya.emulator.backend import INTERNAL_DEVICE, INTERNAL_TYPE, is_cuda_like
from maya.emulator.ctc_loss import ctc_loss_outputs
from maya.emulator.distributed import COLLECTIVE_NAMESPACES, record_functional_collective
from maya.emulator.events import EventKind, Phase
from maya.emulator.generators import without_emulated_generator
from maya.emulator.grouped_mm import SCALED_MM_REFUSED, grouped_mm_fallback, grouped_mm_falls_back, scaled_mm_allowed
from maya.emulator.host_tensors import host_ints, runs_on_host
from maya.emulator.module_tracker import ModuleTracker
from maya.emulator.operand_copies import COPYING_OPS, copied_operands
from maya.emulator.out_of_memory import defer, in_backward, raise_out_of_memory
from maya.emulator.shape_caches import GEMM_OPERAND, ShapeCache
from maya.emulator.shape_caches import category as shape_category
from maya.emulator.state import EmulationState
from maya.emulator.sync_batch_norm import SHAPES as SYNC_BATCH_NORM_SHAPES
from maya.emulator.value_hints import ValueHints
from maya.emulator.weak_ids import WeakIdMap

aten = torch.ops.aten
_get_sequence_nr = torch._C._autograd._get_sequence_nr

MATMUL_OPS = frozenset({"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addmv", "aten::mv", "aten::addbmm", "aten::_scaled_mm"})
"""Ops that run through cuBLAS. PyTorch keeps one cuBLAS handle per thread and one workspace per
(handle, stream), so the first such op of each thread on each stream allocates a workspace: the
autograd engine's backward thread gets its own (seen on the H200: benchmarks/gpu/op_timelines_h200)."""
ALLOCATION_OPS = frozenset({"aten::empty.memory_format", "aten::empty_strided", "aten::empty_like", "aten::new_empty", "aten::new_empty_strided", "aten::resize_", "aten::set_.source_Storage_storage_offset", "aten::set_.source_Tensor"})
"""Ops that only allocate or re-point storage: memory is tracked, no kernel is recorded."""
CUDNN_TF32_OPS = frozenset({"aten::convolution", "aten::convolution_backward", "aten::_cudnn_rnn", "aten::_cudnn_rnn_backward"})
"""Ops that run through cuDNN (convolutions, fused RNNs), whose float32 form uses TF32 when
cudnn.allow_tf32 is on (PyTorch's default; an LSTM forward+backward of hidden 1,024 on an H200 takes
14.1 ms with it and 30.5 ms without: benchmarks/gpu/rnn_tf32_h200.json)."""
COPY_OPS = frozenset({"aten::_to_copy", "aten::copy_"})
PIN_OPS = frozenset({"aten::_pin_memory", "aten::pin_memory"})


class UnsupportedOperation(RuntimeError):
    """An op Maya cannot emulate; the message names the op and the module path it ran under."""


@functools.cache
def _op_name(func: torch._ops.OpOverload) -> str:
    name = func._schema.name
    return name if func._overloadname == "default" else f"{name}.{func._overloadname}"


@functools.cache
def _functional_overload(func: torch._ops.OpOverload) -> tuple[str, frozenset] | None:
    """(name, out argument names) of the functional op an `out=` overload computes (`aten::mm.out` ->
    `aten::mm`, `aten::sum.IntList_out` -> `aten::sum.dim_IntList`), None for other ops: on a GPU the
    same kernel runs either way and profilers name it by the functional op, so the trace does too and
    the out tensors, which the kernel writes, are not recorded among its inputs."""
    schema = func._schema
    outs = frozenset(a.name for a in schema.arguments if a.is_out)
    if not outs or func.namespace != "aten":
        return None
    wanted = [a.name for a in schema.arguments if not a.is_out]
    packet = getattr(torch.ops.aten, schema.name.split("::", 1)[1])
    for overload in packet.overloads():
        candidate = getattr(packet, overload)._schema
        if [a.name for a in candidate.arguments] == wanted and not any(a.is_out for a in candidate.arguments) \
                and not candidate.is_mutable:
            return _op_name(getattr(packet, overload)), outs
    return None


METADATA_OPS = frozenset({"aten::_unsafe_view", "aten::lift_fresh", "aten::alias", "aten::as_strided_"})
"""Ops whose schema does not mark them as views but which only make new tensor metadata (`as_strided_`
restrides a tensor in place: a CNN's global pooling output, which CUDA runs no kernel for)."""


@functools.cache
def _launches_nothing(func: torch._ops.OpOverload) -> bool:
    """Views, metadata-only ops, and queries that return no tensor and mutate nothing (prim::device)."""
    if _op_name(func) in METADATA_OPS:
        return True
    schema = func._schema
    returns = schema.returns
    if returns and all(r.alias_info is not None and not r.alias_info.is_write for r in returns):
        return True
    mutates = any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments)
    returns_tensor = any("Tensor" in str(r.type) for r in returns)
    return not mutates and not returns_tensor


def _flat_outputs(out: object) -> list[torch.Tensor]:
    """The tensors an op returned, in order (`flatten_tensors` of a tuple or list result, or of one value)."""
    return flatten_tensors(out if isinstance(out, (tuple, list)) else (out,), {})


def _tf32_permission(name: str) -> bool | None:
    if name in MATMUL_OPS:
        return _tf32_allowed(torch.backends.cuda.matmul, "allow_tf32")
    if name in CUDNN_TF32_OPS:
        return _tf32_allowed(torch.backends.cudnn.rnn if "rnn" in name else torch.backends.cudnn.conv, None)
    return None


def _tf32_allowed(holder: object, legacy: str | None) -> bool:
    """Whether `holder`'s float32 ops may use TF32: its `fp32_precision` is "tf32" (PyTorch 2.9's API,
    which the older setters also set; PyTorch raises on a read of the older flags once a script has
    used this one), or, in a PyTorch without it, the older flag (`allow_tf32` of `holder`, or of
    `torch.backends.cudnn` when `legacy` is None)."""
    precision = getattr(holder, "fp32_precision", None)
    if precision is not None:
        return precision == "tf32"
    return bool(getattr(holder, legacy) if legacy else torch.backends.cudnn.allow_tf32)


def _pack_padded_sequence(x: torch.Tensor, lengths: torch.Tensor, batch_first: bool) -> tuple[tuple, bool]:
    """`aten::_pack_padded_sequence` of a fake GPU `x`: its rows are as many as the `lengths` (a host
    tensor, as PyTorch requires) sum to. PyTorch's own CPU kernel runs for real on a one-byte-per-element
    stand-in for `x`'s batch and time dimensions, so the `batch_sizes` it returns, and its errors
    (unsorted or zero lengths), are PyTorch's; the GPU gathers the rows without waiting on the host
    (the False returned: no sync). Lengths without values (copied from the GPU, a sync the copy
    recorded) stand for every sequence using all of `x`'s time steps."""
    values = host_ints(lengths)
    steps, batch = (x.shape[1], x.shape[0]) if batch_first else (x.shape[0], x.shape[1])
    with unset_fake_temporarily():
        real = torch.tensor([steps] * batch if values is None else values, dtype=torch.int64)
        data, batch_sizes = torch._VF._pack_padded_sequence(torch.empty(x.shape[:2], dtype=torch.uint8), real, batch_first)
    return (torch.empty((data.shape[0], *x.shape[2:]), dtype=x.dtype, device=x._fake_device), batch_sizes), False


def _no_sync(shape):
    """`shape` (a function of an op's arguments returning its outputs) as `_LENGTH_SHAPED` takes it."""
    return lambda *args, **kwargs: (shape(*args, **kwargs), False)


_LENGTH_SHAPED = {
    "aten::_pack_padded_sequence": _pack_padded_sequence, "aten::_ctc_loss": ctc_loss_outputs,
    "aten::_ctc_loss.Tensor": ctc_loss_outputs,
    **{name: _no_sync(shape) for name, shape in SYNC_BATCH_NORM_SHAPES.items()},
}
"""Ops whose outputs Maya shapes itself: op name -> function returning the outputs and whether the
real step syncs to read host values. Ops of sequence lengths (FakeTensor refuses their host length
tensors), and SyncBatchNorm's CUDA-only ops (no meta and no host kernel)."""


@functools.cache
def _composite(func: torch._ops.OpOverload) -> bool:
    """Whether `func` is only a decomposition into other aten ops (a CompositeImplicitAutograd kernel
    and no kernel of the emulated device: one with both, such as `silu_backward`, runs as one kernel
    on CUDA, and `backend._register_backend_kernels` gave it a device kernel to say so)."""
    name = func.name()
    return (torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeImplicitAutograd")
            and not torch._C._dispatch_has_kernel_for_dispatch_key(name, "PrivateUse1"))


def _non_strided_gpu_layouts(out: object) -> set:
    """The layouts other than strided (sparse, nested) of the GPU tensors an op returned; checked on
    every op, so a lone strided tensor, the usual result, returns at once."""
    if isinstance(out, torch.Tensor):
        return set() if out.layout is torch.strided or not _on_gpu(out) else {out.layout}
    if not isinstance(out, (tuple, list)):
        return set()
    return {t.layout for t in out if isinstance(t, torch.Tensor) and t.layout is not torch.strided and _on_gpu(t)}


_UNIQUE_ARGS = {
    "aten::_unique2": ((), 2), "aten::unique_consecutive": ((3, "dim"), 1),
    "aten::unique_dim": ((1, "dim"), 3), "aten::unique_dim_consecutive": ((1, "dim"), 2),
}
"""Unique ops -> ((position, name) of `dim`, or none; position of `return_inverse`, `return_counts`
following it)."""


def _unique_call(name: str, args: tuple, kwargs: dict) -> tuple[int | None, bool, bool]:
    """(dim or None, return_inverse, return_counts) of a unique op's call."""
    dim_arg, first = _UNIQUE_ARGS[name]
    dim = (args[dim_arg[0]] if len(args) > dim_arg[0] else kwargs.get(dim_arg[1])) if dim_arg else None
    flags = [args[i] if len(args) > i else kwargs.get(key, False)
             for i, key in ((first, "return_inverse"), (first + 1, "return_counts"))]
    return dim, bool(flags[0]), bool(flags[1])


PLACEHOLDER_READS_MAX = 50_000
"""Reads of unknown GPU values within one iteration after which the script is stopped (a loop that
waits on a value would never end); an evaluation loop of this many batches between two optimizer
steps is beyond what an emulation needs."""

HOST_FALLBACK_MAX_NUMEL = 1 << 24
"""Largest input (elements) of an op without a kernel for the emulated device that Maya runs on host
stand-ins (`_run_on_host`); a larger one is named as unsupported."""


@functools.cache
def _returns_new_tensors(func: torch._ops.OpOverload) -> bool:
    """Whether `func` mutates none of its arguments and returns no alias of one (a functional op)."""
    schema = func._schema
    return all(a.alias_info is None for a in (*schema.arguments, *schema.returns))


NON_STRIDED_RESULT = object()
"""What `_run_on_host` returns for an op whose host result is nested or sparse."""


def _run_on_host(func: torch._ops.OpOverload, args: tuple, kwargs: dict) -> object | None:
    """`func` run for real on zero-filled host tensors shaped as its fake GPU inputs, its outputs
    returned as fake GPU tensors of the same shapes, strides and dtypes; None where the inputs are too
    large (`HOST_FALLBACK_MAX_NUMEL`) or the host has no kernel either. The values are placeholders."""
    fakes = [t for t in flatten_tensors(args, kwargs) if _on_gpu(t)]
    if not fakes or any(t.numel() > HOST_FALLBACK_MAX_NUMEL for t in fakes):
        return None
    device = fakes[0]._fake_device

    def stand_in(a: object) -> object:
        if isinstance(a, torch.Tensor) and _on_gpu(a):
            return torch.empty_strided(a.shape, a.stride(), dtype=a.dtype).zero_()
        return a

    with unset_fake_temporarily():
        host_args = torch.utils._pytree.tree_map(stand_in, (args, kwargs))
        try:
            result = func(*host_args[0], **host_args[1])
        except (NotImplementedError, RuntimeError):
            return None
    if any(t.is_nested or t.layout is not torch.strided for t in flatten_tensors((result,), {})):
        return NON_STRIDED_RESULT  # cannot stand for a GPU tensor: the op is named as unsupported

    def on_device(r: object) -> object:
        if isinstance(r, torch.Tensor):
            return torch.empty_strided(r.shape, r.stride(), dtype=r.dtype, device=device)
        return r

    return torch.utils._pytree.tree_map(on_device, result)


_NO_RESULT = object()
"""What an op that raised inside a backward pass returns: not a tensor, so the engine stops there."""


def _on_gpu(t: torch.Tensor) -> bool:
    return isinstance(t, FakeTensor) and t._fake_device.type == INTERNAL_TYPE


def _is_wrapper_subclass(t: type) -> bool:
    """A tensor subclass with its own `__torch_dispatch__` (DTensor), not a fake tensor or a Parameter."""
    return not issubclass(t, FakeTensor) and t.__torch_dispatch__ is not torch.Tensor.__torch_dispatch__


def pause_during_sharding_propagation(patcher, recorder: "Recorder") -> None:
    """Don't record the ops DTensor runs on global-shape fakes to learn an op's output shape.

    `ShardingPropagator._propagate_tensor_meta_non_cached` re-enters the active fake mode and runs
    each new op once on fake tensors of the *global* shapes; on a GPU those only exist as metadata.
    """
    from torch.distributed.tensor._sharding_prop import ShardingPropagator

    original = ShardingPropagator._propagate_tensor_meta_non_cached

    def propagate(self, op_schema):
        recorder.paused += 1
        try:
            return original(self, op_schema)
        finally:
            recorder.paused -= 1

    patcher.set(ShardingPropagator, "_propagate_tensor_meta_non_cached", propagate)


def _other_proxy_index(device: object) -> bool:
    """A device index given as a bare int (`torch.empty(n, device=torch.cuda.current_device())`,
    Megatron-Core's buffers) reaches the dispatcher as the proxy device of that index (`maya:1`), as
    PyTorch maps an int to its accelerator; every emulated tensor lives on the proxy's index 0."""
    return isinstance(device, torch.device) and device.type == INTERNAL_TYPE and device.index not in (None, 0)


class Recorder(TorchDispatchMode):
    """Records GPU ops into `state` and emulates their memory."""

    def __init__(self, state: EmulationState, tracker: ModuleTracker) -> None:
        super().__init__()
        self.state = state
        self.tracker = tracker
        self._pinned = WeakIdMap()
        """Host tensors pinned with pin_memory()."""
        self._all_results = WeakIdMap()
        """Boolean results of `all` reductions (placeholder True)."""
        self.values = state.values = ValueHints()
        """Uniform-routing hints about fake values: sizes of `nonzero` and friends, `.item()` answers.
        The same object as `state.values` (collectives tell it what they write); kept here too, as
        every op reads it."""
        self._placeholder_reads = (0, 0)
        """(iteration, reads of unknown values in it): `_count_placeholder_read`."""
        self._data_dependent = WeakIdMap()
        """Tensor -> (size, call) pairs: the sizes of its shape that a data-dependent op chose, each with
        the number of the call that chose it."""
        self._data_dependent_calls = 0
        self._shapes = ShapeCache()
        self.paused = 0
        """Above 0 while ops run that the GPU never runs (DTensor's shape propagation): not recorded."""
        self._internal = 0
        """Above 0 while an op's CUDA implementation makes its own copies (`internal_launches`)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        try:
            return self._dispatch(func, types, args, kwargs)
        except Exception as error:
            if not in_backward():
                raise
            # Raised on the autograd engine's thread, the error would abort the process with no message
            # (out_of_memory.py says why): keep it for the backward call to raise, and give the
            # dispatcher a result it cannot use, which stops the pass with a C++ error instead.
            defer(self.state, error)
            return _NO_RESULT

    def _dispatch(self, func, types, args, kwargs):
        if any(_is_wrapper_subclass(t) for t in types):
            # A wrapper subclass (DTensor, AsyncCollectiveTensor): let it unwrap first. Its inner
            # ops on fake local tensors then come back here and are recorded; handled here, they
            # would run below this mode and never be seen (FakeTensorMode does the same).
            if not self.paused and any(t.__name__ == "DTensor" for t in types):
                self._note_dtensor_op(args, kwargs)
            return NotImplemented
        kwargs = without_emulated_generator(kwargs or {})
        self.state.dispatched_ops += 1
        name = _op_name(func)
        if kwargs:
            device = kwargs.get("device")
            if device is not None and (is_cuda_like(device) or _other_proxy_index(device)):
                kwargs = {**kwargs, "device": INTERNAL_DEVICE}
            if kwargs.get("pin_memory") and not self.paused:
                # A factory asked for pinned host memory (torch.empty(..., pin_memory=True), DDP's
                # reducer): made unpinned, and remembered as pinned, so is_pinned() holds.
                out = self._dispatch(func, types, args, {**kwargs, "pin_memory": False})
                if isinstance(out, torch.Tensor):
                    self._pinned.set(out)
                return out
            if kwargs.get("pin_memory"):
                kwargs = {**kwargs, "pin_memory": False}
        if self.paused:
            return func(*args, **kwargs)
        if name in PIN_OPS:
            self._pinned.set(args[0])
            return args[0]
        if func is aten.is_pinned.default:
            return self._is_pinned(args[0])
        if runs_on_host(func, args, kwargs):  # real small CPU tensors: item() included
            with unset_fake_temporarily():
                return func(*args, **kwargs)
        if func is aten._local_scalar_dense.default or func is aten.item.default:  # item(): in inference mode
            return self._item(args[0])
        if func is aten._scaled_mm.default and _on_gpu(args[0]) and not scaled_mm_allowed(
                self.state.config.gpu.compute_capability):
            raise RuntimeError(SCALED_MM_REFUSED)
        if func is aten._grouped_mm.default and _on_gpu(args[0]) and grouped_mm_falls_back(
                args[0], args[1], kwargs.get("out_dtype", args[4] if len(args) > 4 else None),
                capability=self.state.config.gpu.compute_capability):
            with self:  # CUDA's fallback: its ops are recorded one by one
                return grouped_mm_fallback(self.values, *args, **kwargs)
        if func.namespace == "aten" and _composite(func) and name not in _LENGTH_SHAPED:
            # A composite op reaches the modes only below autograd (inference mode, a higher-order
            # operator's rule); elsewhere autograd has decomposed it already. Decompose it here too,
            # so that inference-mode steps record the kernels a training forward records (the fake
            # mode's own decomposition would run without this recorder: inside FlexAttention's rule
            # a host tensor's copy to the GPU then failed).
            with self:
                out = func.decompose(*args, **kwargs)
            if out is not NotImplemented:
                return out
        if func in COPYING_OPS:  # the copies its CUDA implementation makes below the dispatcher
            args = copied_operands(func, args, self.internal_launches)
        dynamic_shape = False
        try:
            if name in _LENGTH_SHAPED:  # before FakeTensor: host length tensors, or no kernel to shape them
                out, dynamic_shape = _LENGTH_SHAPED[name](*args, **kwargs)
            else:
                out = func(*args, **kwargs)
        except DynamicOutputShapeException:
            out = self._select_all(func, name, args, kwargs)
            dynamic_shape = True
            self._mark_data_dependent(name, args, out)
        except UnsupportedOperatorException:
            raise self._unsupported(name, "it has no fake (meta) implementation to compute its output shapes") from None
        except DataDependentOutputException as e:
            if func is aten.equal.default:
                return True
            raise self._unsupported(name, f"its result depends on tensor values ({e})") from None
        except (NotImplementedError, RuntimeError) as e:
            if isinstance(e, (EmulatedOutOfMemory, UnsupportedOperation, torch.OutOfMemoryError)):
                raise
            message = str(e).splitlines()[0] if str(e) else type(e).__name__
            host_out = None
            if "from the 'maya' backend" in message and _returns_new_tensors(func):
                # Fake tensors ran the op's real kernel on the emulated device, which has none (PyTorch
                # has no meta kernel for it): run it on host stand-ins for the shapes of its outputs.
                host_out = _run_on_host(func, args, kwargs)
            if host_out is NON_STRIDED_RESULT:
                raise self._unsupported(name, "its output is a nested or sparse tensor, which Maya does not emulate "
                                        "(nn.TransformerEncoder's inference fast path makes a nested one from a "
                                        "padding mask)") from None
            if host_out is not None:
                out = host_out
            elif "meta" in message or "not implemented" in str(e).lower() or isinstance(e, NotImplementedError):
                raise self._unsupported(name, message) from None
            else:
                raise
        layouts = _non_strided_gpu_layouts(out)
        if layouts:  # checked here: such outputs would otherwise pass unrecorded, as if not on the GPU
            raise self._unsupported(name, f"its output is a GPU tensor of layout {', '.join(map(str, layouts))} "
                                    "(sparse: Embedding(sparse=True) gradients, torch.sparse), whose ops Maya does not "
                                    "emulate: use dense tensors (Embedding's default)")
        self.values.observe(name, func, args, kwargs, out)
        inputs = outputs = None
        if self._data_dependent and not dynamic_shape:
            inputs, outputs = flatten_tensors(args, kwargs), _flat_outputs(out)
            self._carry_data_dependent(inputs, outputs)
        if _launches_nothing(func):
            return out
        if isinstance(out, torch.Tensor) and out.dtype is torch.bool and self._placeholder_true(name, args):
            self._all_results.set(out)
        if inputs is None:
            inputs, outputs = flatten_tensors(args, kwargs), _flat_outputs(out)
        if not any(map(_on_gpu, outputs)) and not any(map(_on_gpu, inputs)):
            return out
        state = self.state
        phase, module = self.tracker.current()
        if state.in_optimizer and phase is not Phase.BACKWARD:
            phase = Phase.OPTIMIZER
        self._allocate(outputs, name, phase, module)
        if name in ALLOCATION_OPS:
            return out
        if state.nccl.pending:
            state.nccl.wait_for_tensors(inputs + outputs)
        if func.namespace in COLLECTIVE_NAMESPACES:
            record_functional_collective(func, args, kwargs, out)
            return out
        if (functional := _functional_overload(func)) is not None:
            name, out_names = functional
            kwargs = {k: v for k, v in kwargs.items() if k not in out_names}
            inputs = flatten_tensors(args, kwargs)
        if name in COPY_OPS and self._record_copy(name, args, kwargs, inputs, outputs, phase, module):
            return out
        attrs, input_metas = encode_call(args, kwargs)
        if name in CUDNN_BENCHMARK_OPS and torch.backends.cudnn.benchmark:
            attrs[CUDNN_BENCHMARK] = True
        self._mark_shape(name, inputs, input_metas, attrs)
        if self._internal:
            attrs[INTERNAL_LAUNCH] = True
        state.add_row(
            EventKind.KERNEL,
            name,
            phase=phase,
            module=module,
            inputs=tuple(input_metas),
            outputs=tuple(map(tensor_meta, outputs)),
            attrs=attrs,
            allow_tf32=_tf32_permission(name),
        )
        if dynamic_shape and any(map(_on_gpu, inputs)):
            state.add_row(EventKind.SYNC, "cuda:device_to_host", phase=phase, module=module)
        if phase is Phase.FORWARD and torch.is_grad_enabled() and any(t.requires_grad for t in inputs):
            # Autograd created this op's node just before dispatching here: remember its module.
            self.tracker.node_modules[_get_sequence_nr() - 1] = module
        return out

    def _note_dtensor_op(self, args: tuple, kwargs: dict) -> None:
        """A host row for DTensor's Python dispatch (sharding propagation) of one op; `ops` counts the
        DTensors beyond the first (foreach lists), charged per list entry (framework_overhead.py)."""
        n = sum(1 for t in flatten_tensors(args, kwargs) if type(t).__name__ == "DTensor")
        phase, module = self.tracker.current()
        self.state.add_row(EventKind.HOST, "dtensor:op", phase=phase, module=module, attrs={"ops": max(n - 1, 0)})

    def _allocate(self, outputs: list[torch.Tensor], name: str, phase: Phase, module: str = "") -> None:
        state = self.state
        try:
            handle = (state.current_stream, phase is Phase.BACKWARD)
            if name in MATMUL_OPS and handle not in state.workspace_streams:
                state.workspace_streams.add(handle)
                state.allocator.malloc(state.cublas_workspace_bytes, state.current_stream)
            for t in outputs:
                if not _on_gpu(t):
                    continue
                storage = t.untyped_storage()
                key = storage._cdata
                if key in state.live_storages:
                    continue
                nbytes = storage.nbytes()
                if nbytes == 0:
                    continue
                block = state.allocator.malloc(nbytes, state.current_stream)
                state.live_storages[key] = (block, weakref.ref(storage, functools.partial(self._free, key)))
        except EmulatedOutOfMemory as e:
            state.oom = True
            state.note_memory()
            where = f"in module `{module}`" if module else "outside every module"
            raise_out_of_memory(state, f"{e} Maya: the allocation was {name}'s, {where}, in the {phase.value} "
                                       f"pass of iteration {len(state.iterations) - 1}.")
        state.note_memory()

    def _free(self, key: int, _ref: object = None) -> None:
        entry = self.state.live_storages.pop(key, None)
        if entry is not None:
            self.state.allocator.free(entry[0])

    def _record_copy(self, name, args, kwargs, inputs, outputs, phase, module) -> bool:
        if name == "aten::copy_":
            dst, src = args[0], args[1]
            non_blocking = bool(args[2]) if len(args) > 2 else bool(kwargs.get("non_blocking", False))
        else:
            src, dst = args[0], outputs[0]
            non_blocking = bool(kwargs.get("non_blocking", False))
        src_gpu, dst_gpu = _on_gpu(src), _on_gpu(dst)
        if src_gpu == dst_gpu:
            return False
        host = dst if src_gpu else src
        attrs = {
            "src": "cuda" if src_gpu else "cpu",
            "dst": "cuda" if dst_gpu else "cpu",
            "non_blocking": non_blocking,
            "pinned": self._is_pinned(host),
        }
        self.state.add_row(
            EventKind.MEMCPY,
            name,
            phase=phase,
            module=module,
            inputs=tuple(map(tensor_meta, inputs)),
            outputs=tuple(map(tensor_meta, outputs)),
            attrs=attrs,
        )
        if not non_blocking:
            # A blocking copy between host and GPU, either way, ends in `stream_synchronize`
            # (ATen's copy_kernel_cuda): the host waits for all earlier work on the stream, so a
            # loop that copies each batch to the GPU starts every step with an idle GPU.
            sync = "cuda:device_to_host" if src_gpu else "cuda:host_to_device"
            self.state.add_row(EventKind.SYNC, sync, phase=phase, module=module)
        return True

    def _placeholder_true(self, name: str, args: tuple) -> bool:
        """Whether a boolean result reads True (`_item`): an `all` reduction, and the negation of a
        boolean that reads False (`~torch.isnan(loss)`), so that negating a check flips its answer."""
        if name.startswith("aten::all"):
            return True
        if name in ("aten::logical_not", "aten::bitwise_not") and args and isinstance(args[0], torch.Tensor):
            return args[0].dtype is torch.bool and not self.reads_true(args[0])
        return False

    def reads_true(self, t: torch.Tensor) -> bool:
        """Whether boolean tensor `t` reads True (an `all` result, a finiteness check, a negation)."""
        return self._all_results.get(t, False)

    def remember_true(self, t: torch.Tensor) -> None:
        """Make boolean tensor `t` read True."""
        self._all_results.set(t)

    def remember_pinned(self, t: torch.Tensor) -> None:
        """Take host tensor `t` as pinned (its copies to the GPU may then be asynchronous)."""
        self._pinned.set(t)

    def _is_pinned(self, t: torch.Tensor) -> bool:
        return self._pinned.get(t, False)

    def _item(self, t: torch.Tensor) -> object:
        constant = getattr(t, "constant", None)
        if constant is not None:
            # Host-side scalars the fake mode tracks for real (optimizer step counters, ...).
            return constant.item()
        if _on_gpu(t):
            phase, module = self.tracker.current()
            self.state.add_row(EventKind.SYNC, "cuda:item", phase=phase, module=module)
        hinted = self.values.item(t)
        if hinted is not None:
            return hinted
        self._count_placeholder_read()
        if t.dtype is torch.bool:
            return self.reads_true(t)
        if t.is_floating_point() or t.is_complex():
            return 0.0
        return 1

    @contextlib.contextmanager
    def internal_launches(self):
        """Record the ops run inside as kernels another op launches from C++ (`INTERNAL_LAUNCH`)."""
        self._internal += 1
        try:
            with self:
                yield
        finally:
            self._internal -= 1

    def _mark_shape(self, name: str, inputs: list, input_metas: list, attrs: dict) -> None:
        """Add the `data_dependent_shape` and `new_shape` marks (`maya.emulator.attrs`) that a kernel row
        takes to `attrs`."""
        tags = frozenset().union(*(self._data_dependent_sizes(t) for t in inputs)) if self._data_dependent else frozenset()
        if tags:
            attrs[DATA_DEPENDENT_SHAPE] = True
        kind = shape_category(name, input_metas, bool(tags) and self._reduces_data_dependent(name, inputs))
        if kind is not None and self._shapes.first_run(name, input_metas, attrs, frozenset(o for _, o in tags)):
            attrs[NEW_SHAPE] = kind

    def _reduces_data_dependent(self, name: str, inputs: list) -> bool:
        """Whether GEMM `name` reduces over a data-dependent size (a weight gradient over an expert's
        tokens): both operands carry a data-dependent size equal to the reduction size. A size alone can
        coincide with a fixed one (2,048 tokens an expert, and a hidden width of 2,048), but the fixed
        operand of a GEMM on routed tokens (a weight) carries none."""
        a = GEMM_OPERAND.get(name)
        if a is None or a + 1 >= len(inputs) or inputs[a].dim() < 2 or inputs[a + 1].dim() < 2:
            return False
        k = inputs[a].shape[-1]
        return all(any(size == k for size, _ in self._data_dependent_sizes(t)) for t in inputs[a:a + 2])

    def _data_dependent_sizes(self, t: object) -> frozenset[tuple[int, int]]:
        """The (size, call) pairs of `t`'s shape that a data-dependent op chose (none for anything else)."""
        return self._data_dependent.get(t, frozenset())

    def _mark_data_dependent(self, name: str, args: tuple, out: object) -> None:
        """Note the sizes a data-dependent op (`_select_all`) chose: the selected count of `nonzero`,
        `masked_select`, boolean indexing and `repeat_interleave`, the distinct count of `unique`,
        when the values they count are not known exactly (`ValueHints.exact`: a copy of host data
        selects the same every step). `bincount`'s length (the largest value, or `minlength`) is not
        taken as changing."""
        if name == "aten::bincount":
            return
        if name == "aten::index.Tensor":
            counted = [i for i in args[1] if isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8)]
        else:
            counted = [args[1] if name == "aten::masked_select" else args[0]]
        if all(self.values.exact(t) is not None for t in counted):
            return
        outputs = _flat_outputs(out)
        if not outputs or not outputs[0].dim():
            return
        first = outputs[0]
        if name == "aten::index.Tensor" or name in _UNIQUE_ARGS:  # x[mask], unique(x, dim): sizes x lacks
            sizes = frozenset(first.shape) - frozenset(args[0].shape)
        else:  # nonzero's rows, masked_select's and repeat_interleave's lengths, unique's elements
            sizes = frozenset(first.shape[:1])
        if sizes:
            self._data_dependent_calls += 1
            for t in outputs:
                kept = frozenset((size, self._data_dependent_calls) for size in sizes.intersection(t.shape))
                if kept:
                    self._data_dependent.set(t, kept)

    def _carry_data_dependent(self, inputs: list[torch.Tensor], outputs: list[torch.Tensor]) -> None:
        """Outputs of an op with an input of data-dependent sizes keep those of the sizes their own
        shapes have (`x[token]`, an expert's GEMMs, their gradients); an op's in-place result keeps
        what it had (`out.index_add_(0, token, y)` leaves `out`'s fixed shape fixed)."""
        sizes = frozenset().union(*(self._data_dependent_sizes(t) for t in inputs))
        if not sizes:
            return
        seen = {id(t) for t in inputs}
        for t in outputs:
            if id(t) not in seen:
                shape = set(t.shape)
                kept = frozenset(pair for pair in sizes if pair[0] in shape)
                if kept:
                    self._data_dependent.set(t, kept)

    def _count_placeholder_read(self) -> None:
        """Stop a script that reads unknown values `PLACEHOLDER_READS_MAX` times within one iteration:
        a loop waiting for a GPU value to change (`while not done.item()`) reads the same placeholder
        forever, and would hang the emulation."""
        iteration, reads = self._placeholder_reads
        reads = reads + 1 if iteration == self.state.iteration else 1
        self._placeholder_reads = (self.state.iteration, reads)
        if reads > PLACEHOLDER_READS_MAX:
            _, module = self.tracker.current()
            raise UnsupportedOperation(
                f"Maya stopped the script after {PLACEHOLDER_READS_MAX:,} reads of GPU values it does not compute "
                f"(.item(), bool(), int()) within one iteration (module path: {module or '<top level>'}): a loop "
                "that waits for a value to change never ends under emulation, where such reads give placeholders "
                "(docs/emulation.md, 'Values are not computed'); bound the loop by a count instead")

    def _select_all(self, func, name: str, args: tuple, kwargs: dict) -> object:
        """Data-dependent shapes: select what the value hints say (`ValueHints`), else every element.

        Runs inside the dispatch handler, below the device translation, so new tensors name the
        C++ device (`_fake_device`), never the `cuda:N` that Python code sees.
        """
        x = args[0]
        values = self.values
        if name == "aten::nonzero":
            return torch.empty((values.selected_count(x), x.dim()), dtype=torch.int64, device=x._fake_device)
        if name == "aten::masked_select":
            shape = torch.Size(torch.broadcast_shapes(x.shape, args[1].shape))
            count = round(shape.numel() * values.selected_count(args[1]) / max(args[1].numel(), 1))
            return torch.empty((count,), dtype=x.dtype, device=x._fake_device)
        if name == "aten::index.Tensor":
            indices = []
            for idx in args[1]:
                if idx is not None and idx.dtype in (torch.bool, torch.uint8):
                    count = values.selected_count(idx)
                    indices.extend(
                        torch.zeros((count,), dtype=torch.int64, device=idx._fake_device) for _ in range(idx.dim())
                    )
                else:
                    indices.append(idx)
            return func(x, indices)
        if name == "aten::repeat_interleave.Tensor":  # the indices of repeat_interleave(x, repeats)
            total = values.total(x)
            if total is not None:
                return torch.empty((total,), dtype=x.dtype, device=x._fake_device)
        if name in _UNIQUE_ARGS:
            dim, inverse, counts = _unique_call(name, args, kwargs)
            device = x._fake_device
            if dim is None:  # over elements
                distinct = values.distinct_count(x)
                return (torch.empty((distinct,), dtype=x.dtype, device=device),
                        torch.empty(tuple(x.shape) if inverse else (0,), dtype=torch.int64, device=device),
                        torch.empty((distinct if counts else 0,), dtype=torch.int64, device=device))
            # Along `dim`: its slices are the elements, each taken as distinct (of a 1-D tensor: as
            # over elements, routing indices included).
            dim = dim % max(x.dim(), 1)
            distinct = values.distinct_count(x) if x.dim() == 1 else x.shape[dim]
            shape = list(x.shape)
            shape[dim] = distinct
            return (torch.empty(shape, dtype=x.dtype, device=device),
                    torch.empty((x.shape[dim],) if inverse else (0,), dtype=torch.int64, device=device),
                    torch.empty((distinct if counts else 0,), dtype=torch.int64, device=device))
        if name == "aten::bincount":
            minlength = args[2] if len(args) > 2 else kwargs.get("minlength", 0)
            size = values.bincount_size(x, minlength)
            if size is not None:
                weights = args[1] if len(args) > 1 else kwargs.get("weights")
                dtype = torch.int64 if weights is None else (torch.float64 if weights.dtype == torch.float64 else torch.float32)
                out = torch.empty((size,), dtype=dtype, device=x._fake_device)
                values.note_bincount(x, out)
                return out
        raise self._unsupported(name, "its output shape depends on tensor values")

    def _unsupported(self, name: str, reason: str) -> UnsupportedOperation:
        _, module = self.tracker.current()
        where = module or "<top level>"
        return UnsupportedOperation(f"Maya cannot emulate {name} (module path: {where}): {reason}")
