"""`EmulationSession`: turns the emulated CUDA device on for one rank, and off again.

Entering it registers the proxy backend, patches torch.cuda / autocast / SDPA / tensor and module
movement, installs the module tracker and optimizer hooks, and pushes the fake mode and the
recorder. Leaving it undoes all of that, so a process can emulate several runs one after another.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import warnings
import weakref
from collections.abc import Sequence

import torch
import torch.nn as nn
from torch.nn import Parameter
from torch.utils._python_dispatch import _disable_current_modes as _disable_dispatch_modes

from maya.emulator import state as st
from maya.emulator.autocast import install_autocast
from maya.emulator.backend import INTERNAL_DEVICE, install_backend, is_cuda_like
from maya.emulator.batch_norm import install_batch_norm
from maya.emulator.checkpoints import install_checkpoints
from maya.emulator.compat import install_compat
from maya.emulator.conv_layout import install_conv_layout
from maya.emulator.ctc_loss import install_ctc_loss
from maya.emulator.cuda_api import UnsupportedCudaCall, install_cuda_api
from maya.emulator.cuda_graphs import install_cuda_graphs
from maya.emulator.data_constructors import install_data_constructors
from maya.emulator.deepspeed_compat import install_deepspeed
from maya.emulator.distributed import install_distributed
from maya.emulator.events import EventKind
from maya.emulator.fake_mode import EmulatorFakeMode, is_emulated_cuda, patch_fake_tensor, set_user_device_index
from maya.emulator.flex_attention import install_flex_attention
from maya.emulator.generators import install_generators
from maya.emulator.group_norm import install_group_norm
from maya.emulator.module_tracker import ModuleTracker, install_function_nodes
from maya.emulator.nccl import NcclRuntime
from maya.emulator.object_mailbox import ObjectMailbox, ObjectMessage
from maya.emulator.out_of_memory import install_deferred_errors
from maya.emulator.patcher import Patcher
from maya.emulator.recorder import Recorder, pause_during_sharding_propagation
from maya.emulator.rng_ops import install_rng_ops
from maya.emulator.rnn import install_rnn
from maya.emulator.safetensors_files import install_safetensors
from maya.emulator.sdpa import install_sdpa
from maya.emulator.state import EmulationState, RankConfig
from maya.emulator.storage_addresses import install_storage_addresses
from maya.emulator.storage_resize import install_storage_resize
from maya.emulator.torch_caches import (
    clear_distributed_caches,
    install_mesh_identity,
    remember_global_flags,
    remember_library_globals,
    reset_library_singletons,
)

log = logging.getLogger(__name__)

# PyTorch's autograd engine sizes its device queues at the process's first backward pass, so the
# proxy device is registered as soon as the emulator is imported, before any user code can run one.
install_backend()


class EmulationSession:
    """Context manager: inside it, torch.cuda is the emulated GPU of `config`."""

    def __init__(self, config: RankConfig, elapsed_time_ms=None, objects: Sequence[ObjectMessage] = ()) -> None:
        self.config = config
        self.elapsed_time_ms = elapsed_time_ms
        self.objects = tuple(objects)
        self.state: EmulationState | None = None

    def __enter__(self) -> EmulationState:
        # Fake tensors import torch._dynamo on first use; imported inside the session, its module-level
        # tables would read Maya's stand-ins instead of torch.cuda's functions (PyTorch 2.14's reads
        # `torch.cuda.use_mem_pool.__wrapped__`, which the stand-in lacks: every emulation failed).
        import torch._dynamo  # noqa: F401

        install_backend()
        self.state = state = EmulationState(self.config)
        state.elapsed_time_ms = self.elapsed_time_ms
        state.mailbox = ObjectMailbox.holding(self.objects)
        st.push(state)
        self._patcher = patcher = Patcher()
        set_user_device_index(self.config.local_rank)
        try:
            remember_global_flags(patcher)
            patch_fake_tensor(patcher)
            install_cuda_api(patcher)
            install_cuda_graphs(patcher)
            autocast = install_autocast(patcher)
            install_sdpa(patcher, self.config.gpu.compute_capability, autocast)
            install_rnn(patcher, autocast)
            install_batch_norm(patcher)
            install_conv_layout(patcher)
            install_group_norm(patcher)
            install_ctc_loss(patcher)
            install_data_constructors(patcher)
            install_generators(patcher, self.config.local_world_size)
            install_checkpoints(patcher)
            install_safetensors(patcher)
            install_flex_attention(Recorder)
            install_rng_ops(Recorder)
            _patch_movement(patcher)
            _patch_data_parallel(patcher)
            _patch_transformer_encoder(patcher)
            _patch_lazy_parameters(patcher)
            _patch_numpy(patcher)
            _patch_data_workers(patcher)
            _patch_foreach(patcher)
            install_compat(patcher)
            install_deepspeed(patcher)
            _patch_compile(patcher)
            _patch_profiler(patcher)
            self._tracker = ModuleTracker()
            state.nccl = NcclRuntime(state, self._tracker)
            install_distributed(patcher)
            install_mesh_identity(patcher)
            remember_library_globals(patcher)
            install_storage_resize(patcher, state)
            install_storage_addresses(patcher, state)
            install_deferred_errors(patcher, state)
            self._hooks = _install_optimizer_hooks(state, self._tracker)
            _patch_checkpoint(patcher, state, self._tracker)
            install_function_nodes(patcher, self._tracker)
            self._tracker.install()
            self._fake = EmulatorFakeMode(allow_non_fake_inputs=True)
            self._fake.__enter__()
            self._recorder = Recorder(state, self._tracker)
            pause_during_sharding_propagation(patcher, self._recorder)
            _patch_pin_memory(patcher, self._recorder)
            _patch_finite_checks(patcher, self._recorder)
            self._recorder.__enter__()
            state.settle_autograd = functools.partial(_settle_autograd, self._recorder)
        except BaseException:
            self._undo()
            raise
        return state

    def __exit__(self, *exc: object) -> None:
        self._recorder.__exit__(None, None, None)
        self._fake.__exit__(None, None, None)
        self._undo()

    def _undo(self) -> None:
        tracker = getattr(self, "_tracker", None)
        if tracker is not None:
            tracker.remove()
        for handle in getattr(self, "_hooks", ()):
            handle.remove()
        self._patcher.restore()
        set_user_device_index(0)
        clear_distributed_caches()
        reset_library_singletons()
        st.pop()


def _settle_autograd(recorder: Recorder) -> None:
    """Run an empty, unrecorded backward pass on the emulated device's autograd thread: it starts once
    that thread has let go of the pass before (`maya.emulator.out_of_memory`)."""
    engine = torch.autograd.Variable._execution_engine  # the engine itself, not the patched backward
    recorder.paused += 1
    try:
        total = torch.empty(0, device=INTERNAL_DEVICE, requires_grad=True).sum()
        engine.run_backward((total,), (torch.ones_like(total),), False, False, (), True, True)
    finally:
        recorder.paused -= 1


def mark_iteration() -> None:
    """End the current iteration explicitly, for loops without an optimizer step.

    When a script calls it, its calls alone end iterations; its optimizers' `step()` calls no longer
    do (`maya.emulator.iteration_cycles`). A no-op when no emulation is running, so scripts can call
    it unconditionally.
    """
    try:
        state = st.active()
    except RuntimeError:
        return
    state.end_iteration()


def _install_optimizer_hooks(state: EmulationState, tracker: ModuleTracker) -> list:
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    def pre(optimizer, args, kwargs):
        state.in_optimizer += 1

    def post(optimizer, args, kwargs):
        state.in_optimizer -= 1
        if state.in_optimizer == 0:
            state.end_iteration(optimizer)
            tracker.node_modules.clear()  # the iteration's backward is over

    return [register_optimizer_step_pre_hook(pre), register_optimizer_step_post_hook(post)]


def _internal_args(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    # In Tensor.to, a bare int positional argument is a CUDA device index.
    args = tuple(
        INTERNAL_DEVICE if is_cuda_like(a) or (type(a) is int) else a for a in args
    )
    if "device" in kwargs and (is_cuda_like(kwargs["device"]) or type(kwargs["device"]) is int):
        kwargs = {**kwargs, "device": INTERNAL_DEVICE}
    return args, kwargs


def _patch_movement(patcher: Patcher) -> None:
    """Tensor.to / Tensor.cuda / Module._apply for fake CUDA tensors, and optimizers that follow the
    parameters a module move rebuilds (`_repoint_optimizers`, `_moved_params`)."""
    original_to = torch.Tensor.to

    def to(self, *args, **kwargs):
        args, kwargs = _internal_args(args, kwargs)
        return original_to(self, *args, **kwargs)

    def cuda(self, device=None, non_blocking=False, memory_format=torch.preserve_format):
        return original_to(self, INTERNAL_DEVICE, non_blocking=non_blocking, memory_format=memory_format)

    patcher.set(torch.Tensor, "to", to)
    patcher.set(torch.Tensor, "cuda", cuda)
    patcher.set(torch.Tensor, "type", _tensor_type)
    patcher.set(nn.Module, "_apply", _module_apply)
    original_init = torch.optim.Optimizer.__init__

    def __init__(self, params, *args, **kwargs):
        original_init(self, _moved_params(params), *args, **kwargs)
        _OPTIMIZERS.add(self)

    patcher.set(torch.optim.Optimizer, "__init__", __init__)
    patcher.add_cleanup(_OPTIMIZERS.clear)
    patcher.add_cleanup(_MOVED.clear)
    patcher.after_import("torch.distributed.fsdp._init_utils", lambda module: _patch_fsdp1_move(module, patcher))
    patcher.after_import("torch.distributed.fsdp.fully_sharded_data_parallel",
                         lambda module: _patch_fsdp1_device_id(module, patcher))
    patcher.after_import("torch.distributed.fsdp._fully_shard._fsdp_init",
                         lambda module: _patch_fsdp2_move(module, patcher))
    patcher.after_import("torch.distributed.fsdp._flat_param", lambda module: _refuse_fsdp1_cpu_offload(module, patcher))


_ORIGINAL_TYPE = torch.Tensor.type


def _tensor_type(self, dtype=None, non_blocking=False, **kwargs):
    """`Tensor.type()`: an emulated CUDA tensor is a `torch.cuda.<Type>Tensor` (Megatron's mixed-precision
    optimizer checks parameters so; PyTorch names the proxy device's `torch.maya.<Type>Tensor`), and
    `.type("torch.cuda.HalfTensor")` casts onto the emulated GPU."""
    if dtype is None:
        name = _ORIGINAL_TYPE(self)
        return name.replace(f"torch.{INTERNAL_DEVICE.type}.", "torch.cuda.", 1) if is_emulated_cuda(self) else name
    name = dtype if isinstance(dtype, str) else f"{getattr(dtype, '__module__', '')}.{getattr(dtype, '__name__', '')}"
    host_type = getattr(torch, name.removeprefix("torch.cuda."), None) if name.startswith("torch.cuda.") else None
    if isinstance(getattr(host_type, "dtype", None), torch.dtype):  # torch.FloatTensor & co. know their dtype
        return self.to(device="cuda", dtype=host_type.dtype, non_blocking=non_blocking)
    return _ORIGINAL_TYPE(self, dtype, non_blocking, **kwargs)


def _patch_data_parallel(patcher: Patcher) -> None:
    """`nn.DataParallel` on the one GPU a process emulates, as on a one-GPU machine. Its input scatter
    and output gather run torch._C's CUDA-only `_scatter` / `_gather`, which a CPU build of PyTorch
    lacks (AttributeError); here they are the copies they are, through `Tensor.to`. Several GPUs in
    one process (`device_ids=[0, 1, ...]`) are refused by name: Maya emulates one GPU per process."""
    import torch.nn.parallel.comm as comm
    from torch._utils import _get_device_index

    def scatter(tensor, devices=None, chunk_sizes=None, dim=0, streams=None, *, out=None):
        if out is not None:
            return tuple(o.copy_(c) for o, c in zip(out, tensor.split([o.shape[dim] for o in out], dim)))
        devices = [_get_device_index(d) for d in devices]
        chunks = tensor.split(list(chunk_sizes), dim) if chunk_sizes else tensor.chunk(len(devices), dim)
        copies = []
        for i, (chunk, d) in enumerate(zip(chunks, devices)):
            with torch.cuda.stream(streams[i]) if streams and streams[i] is not None else contextlib.nullcontext():
                copies.append(chunk.to(f"cuda:{d}", non_blocking=True).contiguous())
        return tuple(copies)

    def gather(tensors, dim=0, destination=None, *, out=None):
        if out is not None:
            return torch.cat(list(tensors), dim, out=out)
        device = "cpu" if destination == -1 or destination == "cpu" else f"cuda:{_get_device_index(destination or 0)}"
        return torch.cat([t.to(device) for t in tensors], dim)

    patcher.set(comm, "scatter", scatter)
    patcher.set(comm, "gather", gather)
    import torch.nn.parallel._functions as functions

    side_streams: dict[int, torch.cuda.Stream] = {}

    def _get_stream(device):
        # the side stream a host input is copied on; `torch.device(int)` names the emulation's proxy
        # device, not "cuda", which PyTorch's own check refuses
        return side_streams.setdefault(device.index or 0, torch.cuda.Stream())

    patcher.set(functions, "_get_stream", _get_stream)
    original_init = nn.DataParallel.__init__

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        indices = {_get_device_index(d, True) for d in device_ids or ()}
        if len(indices) > 1:
            raise UnsupportedCudaCall(
                f"torch.nn.DataParallel over several GPUs in one process (device_ids={list(device_ids)}) cannot be "
                "emulated: Maya emulates one GPU per process. Run one process per GPU with "
                "DistributedDataParallel (`maya emulate --nproc-per-node N`), or give DataParallel one device.")
        original_init(self, module, device_ids, output_device, dim)

    patcher.set(nn.DataParallel, "__init__", __init__)


def _patch_transformer_encoder(patcher: Patcher) -> None:
    """`nn.TransformerEncoder` (`enable_nested_tensor=True`, its default) turns a padded batch into a
    nested tensor in inference with a padding mask, to skip the padding; Maya does not emulate nested
    tensors, and an evaluation loop stopped there. Under emulation the encoder keeps the padded batch
    (its layers' fused inference path still runs), with one warning: that forward computes the padding
    the GPU would skip, so it is predicted longer."""
    original = nn.TransformerEncoder.forward
    warned = []

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        requested = getattr(self, "use_nested_tensor", False)
        if requested and src_key_padding_mask is not None and not self.training and not torch.is_grad_enabled() \
                and not warned:
            warned.append(True)
            warnings.warn("nn.TransformerEncoder's nested-tensor inference path is not emulated: Maya runs it on the "
                          "padded batch, so this forward is predicted longer than a GPU that skips the padding",
                          stacklevel=2)
        self.use_nested_tensor = False
        try:
            return original(self, src, mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=is_causal)
        finally:
            self.use_nested_tensor = requested

    patcher.set(nn.TransformerEncoder, "forward", forward)


_OPTIMIZERS: weakref.WeakSet = weakref.WeakSet()
"""The optimizers the running emulation has made (`_repoint_optimizers`)."""

_MOVED: dict[int, tuple[weakref.ref, weakref.ref]] = {}
"""id(parameter) -> weak references to (that parameter, what a module move rebuilt it as), for the
running emulation. Weak: a parameter moved from one GPU tensor to another (`model.cuda()`, then
`.to(torch.bfloat16)`) must free its memory as on a GPU; a dead entry's id may name a new tensor,
which the reference then tells apart."""


def _remember_moves(converted: dict) -> None:
    """Add a module move's parameters to `_MOVED`, and point earlier entries at the parameters that
    this move rebuilt theirs as (the intermediate ones may die: CPU, then GPU float32, then bfloat16)."""
    for key, (old_ref, new_ref) in list(_MOVED.items()):
        new = new_ref()
        if new is not None and id(new) in converted and converted[id(new)][0] is new:
            _MOVED[key] = (old_ref, weakref.ref(converted[id(new)][1]))
    _MOVED.update({key: (weakref.ref(old), weakref.ref(new)) for key, (old, new) in converted.items()})


def _moved(p: object) -> object:
    """What parameter `p` is now: its rebuilt self after every module move, else `p`."""
    while isinstance(p, torch.Tensor) and id(p) in _MOVED:
        old, new = (ref() for ref in _MOVED[id(p)])
        if old is not p or new is None:
            break
        p = new
    return p


def _moved_params(params: object) -> object:
    """An optimizer's `params` (tensors, or param-group dicts) with each moved parameter replaced by
    what it is now: a list of a model's parameters taken before `model.cuda()` (accelerate's
    `DummyOptim`, which DeepSpeed builds its optimizer from after moving the model) holds the GPU
    parameters on a GPU."""
    if isinstance(params, torch.Tensor):
        return _moved(params)
    return [_moved_entry(entry) for entry in params]


def _moved_entry(entry: object) -> object:
    if isinstance(entry, dict) and "params" in entry:  # a param group
        return {**entry, "params": _moved_params(entry["params"])}
    if isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[1], torch.Tensor):  # named_parameters()
        return entry[0], _moved(entry[1])
    return _moved(entry)


def _on_the_gpu(device: object) -> bool:
    """Whether `device` is the emulated GPU: named as CUDA, or the proxy device (`torch.device(0)`
    under emulation)."""
    return is_cuda_like(device) or torch.device(device).type == INTERNAL_DEVICE.type


def _move_host_states(modules, tensors, device: torch.device) -> dict[int, torch.Tensor]:
    """Rebuild, in `modules`, each of `tensors` that is on the host as a tensor on `device`, the way
    `_module_apply` moves a module (FSDP's own move sets `param.data` to the GPU copy, which a host
    tensor cannot take from a fake one). Returns id(old) -> what replaced it (a new Parameter for a
    parameter)."""
    host = {id(t) for t in tensors if t.device.type == "cpu"}
    host |= {id(t.grad) for t in tensors if id(t) in host and t.grad is not None}  # moved with their parameter
    moved: dict[int, torch.Tensor] = {}

    def to_device(t):
        if id(t) not in host:
            return t
        if id(t) not in moved:
            moved[id(t)] = t.to(device)
        return moved[id(t)]

    converted: dict = {}
    for module in modules:
        _convert_own(module, to_device, converted)
    if converted:
        _remember_moves(converted)
        _repoint_optimizers(_OPTIMIZERS)
    return {**moved, **{key: new for key, (_, new) in converted.items()}}


def _patch_fsdp1_move(module, patcher: Patcher) -> None:
    """FSDP1 (`FullyShardedDataParallel(..., device_id=...)`) moves a host module's own parameters
    and buffers, not those of nested FSDP instances, by `_move_states_to_device` (`param.data = ...`);
    here by `_move_host_states`."""
    original = module._move_module_to_device

    def _move_module_to_device(root, ignored_params, ignored_buffers, device_from_device_id):
        if device_from_device_id is None or not _on_the_gpu(device_from_device_id):
            return original(root, ignored_params, ignored_buffers, device_from_device_id)
        from torch.distributed.fsdp import FullyShardedDataParallel

        modules, queue = [], [root]
        while queue:
            current = queue.pop(0)
            modules.append(current)
            queue.extend(m for m in current.children() if not isinstance(m, FullyShardedDataParallel))
        tensors = [t for m in modules for t in m.parameters(recurse=False) if t not in ignored_params]
        tensors += [t for m in modules for t in m.buffers(recurse=False) if t not in ignored_buffers]
        _move_host_states(modules, tensors, torch.device(device_from_device_id))

    patcher.set(module, "_move_module_to_device", _move_module_to_device)
    original_compute_device = module._get_compute_device

    def _get_compute_device(root, ignored_params, device_from_device_id, rank, device_handle):
        # A root whose parameters nested FSDP instances (auto-wrapping) all took has none of its own:
        # FSDP then takes `torch.device(current_device())`, under emulation the proxy device, and found
        # it inconsistent with `device_id` ("maya:0 vs cuda:0"). On a GPU it is that same device.
        if (device_from_device_id is not None and _on_the_gpu(device_from_device_id)
                and next(module._get_orig_params(root, ignored_params), None) is None):
            return torch.device(device_from_device_id)
        return original_compute_device(root, ignored_params, device_from_device_id, rank, device_handle)

    patcher.set(module, "_get_compute_device", _get_compute_device)


def _refuse_fsdp1_cpu_offload(module, patcher: Patcher) -> None:
    """FSDP1's full state dict with `offload_to_cpu=True` moves each unsharded flat parameter to the
    host by `flat_param.data = flat_param.to("cpu")`, which an emulated GPU tensor cannot take; it
    failed with a bare `set_data` error (and Maya's hint about the opposite move). Refused by name
    with what works."""
    @contextlib.contextmanager
    def to_cpu(self):
        raise NotImplementedError(
            "FSDP1's full state dict with offload_to_cpu=True cannot be emulated: it moves each gathered "
            "parameter to the host in place, which an emulated GPU tensor cannot do. Under emulation use "
            "FullStateDictConfig(offload_to_cpu=False), a sharded state dict (StateDictType.SHARDED_STATE_DICT) or "
            "torch.distributed.checkpoint; the training steps before it are kept")
        yield  # never reached: a generator, as the method it replaces

    patcher.set(module.FlatParamHandle, "to_cpu", to_cpu)


def _patch_fsdp1_device_id(module, patcher: Patcher) -> None:
    """FSDP1's `device_id` given as an int (`torch.cuda.current_device()`, the documented form) or the
    proxy device is passed on as `cuda:N`: FSDP makes `torch.device(device_id)` of it, which for an
    int is the current accelerator's device, under emulation the proxy, and then finds it
    inconsistent with its parameters' "cuda" and looks for a `torch.maya` module."""
    cls = module.FullyShardedDataParallel
    original = cls.__init__
    signature = inspect.signature(original)

    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        device_id = bound.arguments.get("device_id")
        if type(device_id) is int or isinstance(device_id, torch.device) and _on_the_gpu(device_id):
            index = device_id if type(device_id) is int else device_id.index
            bound.arguments["device_id"] = torch.device("cuda", torch.cuda.current_device() if index is None else index)
        original(*bound.args, **bound.kwargs)

    patcher.set(cls, "__init__", __init__)


def _patch_fsdp2_move(module, patcher: Patcher) -> None:
    """FSDP2 (`fully_shard` of a module built on the host) moves the parameters and buffers it
    manages by `_move_states_to_device` (`tensor.data = ...`), on the lists `_get_managed_states`
    collected from the managed modules: here those modules' tensors are rebuilt on the GPU by
    `_move_host_states` and the lists updated in place, as FSDP goes on with them."""
    original_states, original_move = module._get_managed_states, module._move_states_to_device
    managed: list = []

    def _get_managed_states(modules, *args, **kwargs):
        managed[:] = list(modules)
        return original_states(modules, *args, **kwargs)

    def _move_states_to_device(params, buffers, device):
        if _on_the_gpu(device) and managed:
            new = _move_host_states(managed, [*params, *buffers], torch.device(device))
            params[:] = [new.get(id(p), p) for p in params]
            buffers[:] = [new.get(id(b), b) for b in buffers]
        managed.clear()
        return original_move(params, buffers, device)

    patcher.set(module, "_get_managed_states", _get_managed_states)
    patcher.set(module, "_move_states_to_device", _move_states_to_device)


def _patch_foreach(patcher: Patcher) -> None:
    """Optimizers and grad clipping take the foreach path only for exact tensor types; on a GPU the
    tensors are plain Tensors, here FakeTensor stands in for them."""
    from torch._subclasses.fake_tensor import FakeTensor
    from torch.optim import optimizer
    from torch.utils import _foreach_utils

    for module in (optimizer, _foreach_utils):
        patcher.set(module, "_foreach_supported_types", [*module._foreach_supported_types, FakeTensor])


def _module_apply(self: nn.Module, fn, recurse: bool = True, _converted: dict | None = None) -> nn.Module:
    """nn.Module._apply that rebuilds each Parameter from the converted tensor.

    PyTorch swaps fake parameters in place (`torch.utils.swap_tensors`), which fails because the
    fake mode holds weak references to them; rebuilding them is what PyTorch's
    `set_overwrite_module_params_on_conversion(True)` does. `_converted` maps each old parameter to
    its replacement across the whole module tree, so a parameter shared by several modules (tied
    embeddings) stays one parameter.
    """
    converted = {} if _converted is None else _converted
    if recurse:
        for module in self.children():
            _module_apply(module, fn, True, converted)
    _convert_own(self, fn, converted)
    if _converted is None and converted:
        _remember_moves(converted)
        _repoint_optimizers(_OPTIMIZERS)
    return self


def _repoint_optimizers(optimizers) -> None:
    """Point optimizers made before a module was moved at its rebuilt parameters (and their state),
    as they hold the same Parameter objects on a GPU, where the move swaps each one's data in place:
    `opt = AdamW(model.parameters()); model.cuda()` then steps the parameters on the GPU (DeepSpeed's
    `initialize` moves a model whose client optimizer is already built)."""
    for optimizer in list(optimizers):
        for group in optimizer.param_groups:
            group["params"] = [_moved(p) for p in group["params"]]
        state = optimizer.state
        for old in [p for p in state if _moved(p) is not p]:
            state[_moved(old)] = state.pop(old)


def _convert_own(self: nn.Module, fn, converted: dict) -> None:
    """`_module_apply`'s conversion of `self`'s own parameters and buffers."""
    for key, param in self._parameters.items():
        if param is None:
            continue
        if id(param) in converted:
            self._parameters[key] = converted[id(param)][1]
            continue
        if isinstance(param, nn.parameter.UninitializedParameter):
            raise RuntimeError(_lazy_module_message(f"{type(self).__name__}.{key}"))
        with torch.no_grad():
            applied = fn(param)
        if applied is param:
            continue
        new_param = Parameter(applied, requires_grad=param.requires_grad)
        if param.grad is not None:
            with torch.no_grad():
                new_param.grad = fn(param.grad)
        # Keep the old parameter alive with its replacement so that its id is not reused.
        converted[id(param)] = (param, new_param)
        self._parameters[key] = new_param
    for key, buf in self._buffers.items():
        if buf is not None:
            self._buffers[key] = fn(buf)


def _patch_finite_checks(patcher: Patcher, recorder: Recorder) -> None:
    """`torch.isfinite(x)` reads True, as `isfinite(x).all()` does: PyTorch decomposes it into
    comparisons (x == x, |x| != inf) that Maya cannot tell from any other, so a check such as
    `if not torch.isfinite(loss): raise ...` stopped the script on the "nothing is wrong" placeholder.
    So does `torch._is_all_true(valid)`, PyTorch's own validity check (`torch._check_tensor_all`, and
    `torch.distributions`, which checks every distribution's parameters and samples against their
    constraints unless `validate_args=False`: a VAE's `Normal(mu, sigma)` stopped with "found invalid
    values"). The checks' kernels, and the host read that follows them, are recorded as before."""
    for owner, name in ((torch, "isfinite"), (torch.Tensor, "isfinite"), (torch, "_is_all_true"),
                        (torch.Tensor, "_is_all_true")):
        original = getattr(owner, name)

        def reads_true(x, *args, _original=original, **kwargs):
            out = _original(x, *args, **kwargs)
            if isinstance(out, torch.Tensor):
                recorder.remember_true(out)
                if recorder.values.exact(out) is None:
                    recorder.values.assume(out, True)
            return out

        patcher.set(owner, name, reads_true)


NUMPY_MAX_NUMEL = 1 << 26
"""Largest emulated tensor `.numpy()` answers with a placeholder array (256 MiB of float32)."""


def _patch_numpy(patcher: Patcher) -> None:
    """`.numpy()` (and `numpy.asarray`) of an emulated tensor: evaluation loops hand predictions to
    numpy and scikit-learn (`preds.argmax(-1).cpu().numpy()`), and a fake tensor refused ("not
    supported for tensor subclasses"). The answer is an array of its values where the emulation knows
    them (`ValueHints.exact`), else of the placeholder values `.item()` gives (0.0, 1, False), of the
    tensor's shape and numpy dtype."""
    from torch._subclasses.fake_tensor import FakeTensor

    original = torch.Tensor.numpy

    def numpy(self, *, force=False):
        if not isinstance(self, FakeTensor):
            return original(self, force=force)
        if self.numel() > NUMPY_MAX_NUMEL:
            raise RuntimeError(f"Maya does not make a placeholder numpy array of {self.numel():,} elements (emulated "
                               f"tensors have no values; the limit is {NUMPY_MAX_NUMEL:,})")
        values = st.active().values if st.is_active() else None
        known = values.exact(self) if values is not None else None
        with _disable_dispatch_modes():
            if known is not None and tuple(known.shape) == tuple(self.shape):
                return original(known.clone())
            host = torch.empty(tuple(self.shape), dtype=self.dtype)
            if self.dtype.is_floating_point or self.dtype.is_complex:
                host.zero_()
            else:
                host.fill_(0 if self.dtype is torch.bool else 1)
            return original(host)

    patcher.set(torch.Tensor, "numpy", numpy)


def _patch_pin_memory(patcher: Patcher, recorder: Recorder) -> None:
    """`Tensor.pin_memory` on a thread without Maya's dispatch modes: DataLoader's pin-memory thread
    (`num_workers > 0` with `pin_memory=True`) pinned each batch with PyTorch's own allocator for the
    accelerator, which the emulated device lacks ("implement `getPinnedMemoryAllocator`"). There the
    batch is taken as pinned and returned as it is; on a thread with the modes the recorder answers
    (`PIN_OPS`), as for any pinned copy."""
    original = torch.Tensor.pin_memory

    def pin_memory(self, *args, **kwargs):
        if torch._C._len_torch_dispatch_stack():
            return original(self, *args, **kwargs)
        recorder.remember_pinned(self)
        return self

    patcher.set(torch.Tensor, "pin_memory", pin_memory)


def _patch_data_workers(patcher: Patcher) -> None:
    """DataLoader worker processes (`num_workers > 0`) load data on the host, as on a GPU machine.

    A forked worker inherits the emulation's dispatch modes, under which a batch larger than the
    real-host-tensor limit became fake, and collating it into shared memory failed ("Can't call
    metadata mutating ops on non-Fake Tensor inputs"). Each worker leaves the modes first: its
    tensors are real host tensors, which the emulating process receives and copies to the GPU.
    """
    from torch.utils.data._utils import worker

    original = worker._worker_loop

    def worker_loop(*args, **kwargs):
        from torch.utils._python_dispatch import _get_current_dispatch_mode, _pop_mode

        while _get_current_dispatch_mode() is not None:
            _pop_mode()
        return original(*args, **kwargs)

    patcher.set(worker, "_worker_loop", worker_loop)


def _lazy_module_message(where: str) -> str:
    return (f"Maya cannot emulate a lazy module's parameters on the GPU before its first forward ({where} is "
            "uninitialized): PyTorch materialises them in place, which a fake GPU tensor cannot take. Give the module "
            "its sizes (nn.Linear(in_features, out_features) for nn.LazyLinear), or run one forward on the host "
            "before moving the model to the GPU.")


def _patch_lazy_parameters(patcher: Patcher) -> None:
    """A lazy module built on the GPU (`nn.LazyLinear(10, device="cuda")`) is named (see
    `_lazy_module_message`), instead of PyTorch's error about a FakeTensor of the wrong type."""
    for cls in (nn.parameter.UninitializedParameter, nn.parameter.UninitializedBuffer):
        original = cls.__new__

        def new(cls, *args, _original=original, **kwargs):
            if is_cuda_like(kwargs.get("device")):
                raise RuntimeError(_lazy_module_message(f"a new {cls.__name__} on {kwargs['device']}"))
            return _original(cls, *args, **kwargs)

        patcher.set(cls, "__new__", new)


def _patch_checkpoint(patcher: Patcher, state: EmulationState, tracker: ModuleTracker) -> None:
    """Record each activation-checkpoint region as host events: its Python bookkeeping costs host time
    that no GPU op accounts for, in two places. `torch:checkpoint` follows the region's forward (RNG
    state, saved-tensor hooks); `torch:checkpoint_recompute` precedes each recomputation of the region
    in backward (the unpack hook that re-runs the forward, its hooks and RNG state restored). Each
    carries the GPU ops of the region's forward as `ops`."""
    import torch.utils.checkpoint as ckpt

    original = ckpt.checkpoint

    def checkpoint(function, *args, use_reentrant=None, **kwargs):
        phase, module = tracker.current()
        region = {"calls": 0, "ops": 0}

        def run(*fargs, **fkwargs):
            region["calls"] += 1
            if region["calls"] > 1:  # the forward again: a recomputation in backward
                now_phase, now_module = tracker.current()
                state.add_row(EventKind.HOST, "torch:checkpoint_recompute", phase=now_phase, module=now_module,
                              attrs={"use_reentrant": use_reentrant, "ops": region["ops"]})
            return function(*fargs, **fkwargs)

        first = len(state.rows)
        out = original(run, *args, use_reentrant=use_reentrant, **kwargs)
        region["ops"] = sum(1 for row in state.rows[first:] if row[2] == EventKind.KERNEL.value)
        state.add_row(EventKind.HOST, "torch:checkpoint", phase=phase, module=module,
                      attrs={"use_reentrant": use_reentrant, "ops": region["ops"]})
        return out

    patcher.set(ckpt, "checkpoint", checkpoint)


def _warn_host_only(profiler: str) -> None:
    warnings.warn(f"{profiler} under Maya emulation records host (CPU) activity only; the emulated GPU's work is in "
                  "Maya's timeline (TRACE_DIR/timeline.json)", stacklevel=3)


def _patch_profiler(patcher: Patcher) -> None:
    """A script's own `torch.profiler.profile(activities=[..., ProfilerActivity.CUDA])` (or the older
    `torch.autograd.profiler.profile(use_device="cuda")`) profiles the host only: a CPU build of PyTorch
    has no CUDA profiler, and each op had printed a C++ warning with its stack ("Failed to record CUDA
    event. CUDA used in profiler but not enabled"), hundreds per step. One warning says so; the GPU
    side is Maya's own timeline. `torch.autograd.profiler.emit_nvtx()` and `torch.cuda.profiler.start()`
    / `stop()` / `profile()` (a capture range for Nsight Systems, which a CPU build refuses or lacks the
    CUDA runtime for) do nothing."""
    from torch.profiler import ProfilerActivity
    from torch.profiler.profiler import _KinetoProfile

    original = _KinetoProfile.__init__

    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        if ProfilerActivity.CUDA in self.activities:
            self.activities = {a for a in self.activities if a != ProfilerActivity.CUDA}
            getattr(self, "activity_filters", {}).pop(ProfilerActivity.CUDA, None)
            if getattr(self, "use_device", None) == "cuda":
                self.use_device = None
            _warn_host_only("torch.profiler")

    patcher.set(_KinetoProfile, "__init__", __init__)
    legacy = torch.autograd.profiler.profile
    original_legacy = legacy.__init__

    def legacy_init(self, *args, **kwargs):
        original_legacy(self, *args, **kwargs)
        if getattr(self, "use_device", None) == "cuda":
            self.use_device = None
            self.profiler_kind = torch.autograd.ProfilerState.KINETO
            self.kineto_activities.discard(ProfilerActivity.CUDA)
            _warn_host_only("torch.autograd.profiler")

    patcher.set(legacy, "__init__", legacy_init)
    # NVTX ranges and the CUDA profiler's start and stop only mark a capture for Nsight Systems; a CPU
    # build refuses the first and has no CUDA runtime for the others
    patcher.set(torch.autograd.profiler.emit_nvtx, "__enter__", lambda self: self)
    patcher.set(torch.autograd.profiler.emit_nvtx, "__exit__", lambda self, *exc: False)
    import torch.cuda.profiler as cuda_profiler

    patcher.set(cuda_profiler, "start", lambda: None)
    patcher.set(cuda_profiler, "stop", lambda: None)


def _patch_compile(patcher: Patcher) -> None:
    """`torch.compile` runs the code eagerly, counting the calls that are inside compiled code
    (`EmulationState.compiled_calls`: FlexAttention there is the fused kernel Inductor makes of it)."""

    def compile(model=None, **kwargs):
        if not _generates_kernels(kwargs.get("backend", "inductor")):
            return (lambda m: m) if model is None else model
        warnings.warn("torch.compile runs eagerly under Maya emulation: its code is predicted as eager PyTorch's "
                      "(Inductor's fused kernels and CUDA graphs are not modelled, but for FlexAttention's; "
                      "compiled code usually runs faster)", stacklevel=2)
        if model is None:
            return _compiled_form
        return _compiled_form(model)

    patcher.set(torch, "compile", compile)
    # Nothing is compiled, so there is nothing to reset; torch's reset also clears Inductor's CUDA graph
    # trees when CUDA is available, importing allocator symbols a CPU build of torch lacks.
    patcher.set(torch._dynamo, "reset", lambda: None)
    patcher.set(torch.compiler, "reset", lambda: None)


def _generates_kernels(backend) -> bool:
    """Whether code compiled with `backend` runs kernels of its own: not with the eager backends, nor
    inside a higher-order operator's own compile (eager FlexAttention compiles its dense form with the
    eager backend)."""
    from torch._higher_order_ops.utils import _hop_compile_tls

    if getattr(_hop_compile_tls, "in_hop_compile", False):
        return False
    name = backend if isinstance(backend, str) else getattr(backend, "__name__", "")
    return "eager" not in name


def _compiled_form(model):
    """What `torch.compile(model)` returns under emulation: a module, with hooks that count its forward
    calls as compiled; a function, wrapped to count its calls."""
    if isinstance(model, torch.nn.Module):
        model.register_forward_pre_hook(_enter_compiled)
        model.register_forward_hook(_leave_compiled, always_call=True)
        return model
    if not callable(model):
        return model

    @functools.wraps(model)
    def compiled(*args, **kwargs):
        state = st.active()
        state.compiled_calls += 1
        try:
            return model(*args, **kwargs)
        finally:
            state.compiled_calls -= 1

    return compiled


def _enter_compiled(module, args) -> None:
    st.active().compiled_calls += 1


def _leave_compiled(module, args, output) -> None:
    st.active().compiled_calls -= 1
