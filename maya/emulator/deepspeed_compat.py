"""DeepSpeed under emulation: its compiled CUDA ops and ZeRO-3's rank-agreement checks.

DeepSpeed compiles each extension it uses (FusedAdam, FusedLamb, CPUAdam, its transformer and
inference kernels, ...) the first time a script loads it (`OpBuilder.load`), the CUDA ones with nvcc.
With no CUDA toolkit that build fails deep inside `torch.utils.cpp_extension` with an error about
CUDA_HOME that says nothing about the op. Under emulation `load` returns Maya's stand-in for the ops it emulates and
raises `UnsupportedOperation` naming the op, its builder and what to use instead for the others.

FusedAdam (`fused_adam`, what DeepSpeed's `"optimizer": {"type": "Adam" / "AdamW"}` runs on a GPU):
its multi-tensor kernel reads the gradients and writes the parameters and both moments, as PyTorch's
fused Adam(W) kernel does, and is recorded as that op (`aten::_fused_adamw_` in AdamW mode, else
`aten::_fused_adam_`) on the same lists, timed by the foreach model. PyTorch's op reads a step tensor
per parameter where DeepSpeed's passes the step as a number: those 0-d tensors are made once per
parameter list (the fills land in the first iteration) and reused.

The patch applies when `deepspeed.ops.op_builder.builder` is imported, before or after the emulation
starts; builders outside an emulation load as DeepSpeed loads them.

ZeRO-3 checks that the ranks agree on its module and parameter order
(`deepspeed.runtime.zero.utils.assert_ints_same_as_other_ranks`): each rank broadcasts rank 0's list
and compares it with its own. What rank 0 sends is not known to another rank's emulation, so the
check would fail on the placeholder; under emulation its two broadcasts (and the host reads that
follow them) are issued on this rank's own lists, which pass: the ranks of a rank class are alike.

DeepSpeed's pipeline engine (`deepspeed.runtime.pipe.engine.PipelineEngine`) is refused by name past
its first stage: each later stage learns the shapes of its inputs from values the stage before it
sends (`_recv_tensor_meta`), which another rank's emulation does not know, and DeepSpeed's own
failure there is a bare assertion.

DeepSpeed's distributed state (its backend and process groups, in module globals) is reset between
emulations with the other libraries' (`maya.emulator.torch_caches.LIBRARY_GLOBALS`).
"""

from __future__ import annotations

import weakref

import torch

from maya.emulator import state as st
from maya.emulator.patcher import Patcher
from maya.emulator.recorder import UnsupportedOperation

_MODULE = "deepspeed.ops.op_builder.builder"

_ON_THE_GPU = 'keep the optimizer on the GPU ("offload_optimizer": {"device": "none"}): an optimizer step on the host CPU is not timed'
_INSTEAD = {
    "cpu_adam": _ON_THE_GPU,
    "cpu_adagrad": _ON_THE_GPU,
    "cpu_lion": _ON_THE_GPU,
    "fused_lamb": 'use "Adam" or "AdamW", or a PyTorch optimizer passed to deepspeed.initialize',
    "fused_lion": 'use "Adam" or "AdamW", or a PyTorch optimizer passed to deepspeed.initialize',
}
"""Builder name -> what runs under emulation instead, for ops a training config commonly names."""


class _FusedAdam:
    """Stand-in for DeepSpeed's compiled `fused_adam` module."""

    def __init__(self) -> None:
        self._steps: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def multi_tensor_adam(self, chunk_size, noop_flag, tensor_lists, lr, beta1, beta2, epsilon, step, mode,
                          bias_correction, weight_decay) -> None:
        grads, params, exp_avgs, exp_avg_sqs = (list(tensors) for tensors in tensor_lists)
        if not params:
            return
        steps = self._steps.get(params[0])
        if steps is None or len(steps) != len(params):
            steps = [torch.zeros((), dtype=torch.float32, device=p.device) for p in params]
            self._steps[params[0]] = steps
        fused = torch._fused_adamw_ if mode else torch._fused_adam_
        fused(params, grads, exp_avgs, exp_avg_sqs, [], steps, lr=float(lr), beta1=float(beta1), beta2=float(beta2),
              weight_decay=float(weight_decay), eps=float(epsilon), amsgrad=False, maximize=False)


def _patch(module: object, patcher: Patcher) -> None:
    builder_class = module.OpBuilder
    original = builder_class.load

    def load(self, verbose=False):
        if not st.is_active():
            return original(self, verbose)
        name = getattr(self, "name", type(self).__name__)
        if name == "fused_adam":
            return _FusedAdam()
        instead = _INSTEAD.get(name, "use a PyTorch implementation of it (DeepSpeed configs often have a switch)")
        raise UnsupportedOperation(
            f"Maya cannot emulate DeepSpeed's compiled op {name!r} ({type(self).__module__}.{type(self).__name__}): "
            f"DeepSpeed compiles it on first use and Maya has no stand-in for it; {instead}")

    patcher.set(builder_class, "load", load)


def _agreeing_ranks(module: object, patcher: Patcher) -> None:
    """ZeRO-3's rank-agreement checks, issued on this rank's own values (the module docstring)."""

    def broadcast_own(values: int | list[int]) -> None:
        import torch.distributed as dist

        t = torch.tensor(values, dtype=torch.int64, device=torch.device("cuda", torch.cuda.current_device()))
        dist.broadcast(t, src=0, async_op=False)
        t.cpu()  # DeepSpeed reads the result on the host

    def assert_lst_len_same_as_other_ranks(lst) -> None:
        broadcast_own(len(lst))

    def get_lst_from_rank0(lst) -> list:
        broadcast_own(list(lst))
        return list(lst)

    patcher.set(module, "assert_lst_len_same_as_other_ranks", assert_lst_len_same_as_other_ranks)
    patcher.set(module, "get_lst_from_rank0", get_lst_from_rank0)


def _refuse_pipeline_stages(module: object, patcher: Patcher) -> None:
    """A pipeline stage that would receive its input shapes from the stage before it (the module docstring)."""
    engine = module.PipelineEngine

    def _recv_tensor_meta(self, send_stage):
        raise NotImplementedError(
            f"Maya cannot emulate DeepSpeed's pipeline engine past its first stage "
            f"({engine.__module__}.{engine.__name__}._recv_tensor_meta): stage {getattr(self, 'stage_id', '?')} learns "
            f"the shapes of its inputs from values stage {send_stage} sends, and every rank is emulated on its own. "
            "Use torch.distributed.pipelining, or DeepSpeed "
            "without pipeline stages (ZeRO)")

    patcher.set(engine, "_recv_tensor_meta", _recv_tensor_meta)


def install_deepspeed(patcher: Patcher) -> None:
    """Patch DeepSpeed's op loading, ZeRO-3's agreement checks and the pipeline engine's shape exchange,
    now for modules imported and on import for the others; `patcher` undoes it."""
    patcher.after_import(_MODULE, lambda module: _patch(module, patcher))
    patcher.after_import("deepspeed.runtime.zero.utils", lambda module: _agreeing_ranks(module, patcher))
    patcher.after_import("deepspeed.runtime.pipe.engine", lambda module: _refuse_pipeline_stages(module, patcher))

