"""`ModuleTracker`: which module (`blocks.3.attn.q`) and phase each recorded op belongs to.

Forward: global module forward pre/post hooks keep a stack of qualified names; names come from
`named_modules()` of the outermost module the first time it runs. Backward: autograd numbers each
node it creates (its sequence number); the recorder maps the number of every forward op's node to
the module path, and a backward op looks up the node that is running it
(`torch._C._current_autograd_node()`). A custom `torch.autograd.Function` runs its forward with grad
off, so no op inside it creates the node: its node is mapped when `apply` returns
(`install_function_nodes`), and its backward (FlexAttention's, a fused kernel's) counts in the module
that called it.
"""

from __future__ import annotations

import weakref

import torch
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

from maya.emulator.events import Phase


class ModuleTracker:
    """Maintains the active module path while forward passes run."""

    def __init__(self) -> None:
        self.stack: list[str] = []
        self._names: weakref.WeakKeyDictionary[torch.nn.Module, str] = weakref.WeakKeyDictionary()
        self._handles: list = []
        self.node_modules: dict[int, str] = {}
        """Autograd node sequence number -> module path of the forward op that created it."""

    def install(self) -> None:
        self._handles = [
            register_module_forward_pre_hook(self._pre),
            register_module_forward_hook(self._post, always_call=True),
        ]

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _pre(self, module: torch.nn.Module, args: object) -> None:
        name = self._names.get(module)
        if name is None:
            if self.stack:
                name = f"{self.stack[-1]}.{type(module).__name__}" if self.stack[-1] else type(module).__name__
            else:
                for sub_name, sub in module.named_modules():
                    self._names.setdefault(sub, sub_name)
                name = ""
        self.stack.append(name)

    def _post(self, module: torch.nn.Module, args: object, output: object) -> None:
        if self.stack:
            self.stack.pop()

    def current(self) -> tuple[Phase, str]:
        """Phase and module path of an op issued right now."""
        node = torch._C._current_autograd_node()
        if node is not None:
            # Activation-checkpoint recomputation runs module forwards inside backward.
            if self.stack:
                return Phase.BACKWARD, self.stack[-1]
            return Phase.BACKWARD, self.node_modules.get(node._sequence_nr(), "")
        if self.stack:
            return Phase.FORWARD, self.stack[-1]
        # Outside any module: the loss computation is forward work; no_grad work is not.
        return (Phase.FORWARD if torch.is_grad_enabled() else Phase.OTHER), ""


def install_function_nodes(patcher, tracker: ModuleTracker) -> None:
    """Map the node of every custom `torch.autograd.Function` applied in a forward pass to the module
    that applied it (the ops of its forward ran with grad off and created none)."""
    function = torch.autograd.function.Function
    original = function.__dict__["apply"].__func__

    def apply(cls, *args, **kwargs):
        out = original(cls, *args, **kwargs)
        if torch._C._current_autograd_node() is None:  # a forward, not a recomputation in backward
            module = tracker.stack[-1] if tracker.stack else ""
            for t in out if isinstance(out, (tuple, list)) else (out,):
                node = getattr(t, "grad_fn", None) if isinstance(t, torch.Tensor) else None
                if node is not None:
                    tracker.node_modules.setdefault(node._sequence_nr(), module)
        return out

    patcher.set(function, "apply", classmethod(apply))

