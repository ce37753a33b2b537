"""Compatibility shims for libraries that treat a FakeTensor as a sign of graph tracing.

Hugging Face transformers asks `is_fake_tensor(x)` to decide whether it is being traced, and when
it is, it builds explicit attention masks and repeats k/v heads instead of letting SDPA handle
causality and grouped-query attention; on a real GPU it does neither. Under emulation, the
emulated CUDA tensors are answered as real ones. The patch applies when the module is imported,
before or after the emulation starts.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys

from maya.emulator.fake_mode import is_emulated_cuda
from maya.emulator.patcher import Patcher

_MODULE = "transformers.utils.import_utils"


def _patch(module: object, patcher: Patcher) -> None:
    original = module.is_fake_tensor

    def is_fake_tensor(x) -> bool:
        return not is_emulated_cuda(x) and original(x)

    patcher.set(module, "is_fake_tensor", is_fake_tensor)


class _PatchOnImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `_MODULE` through the normal finders, then patches it once it has executed."""

    def __init__(self, patcher: Patcher) -> None:
        self.patcher = patcher
        self._spec = None

    def find_spec(self, fullname, path, target=None):
        if fullname != _MODULE:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return None
        self._inner = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module):
        self._inner.exec_module(module)
        _patch(module, self.patcher)


def install_compat(patcher: Patcher) -> None:
    """Apply the shims now for imported modules, and on import for the others; `patcher` undoes them."""
    module = sys.modules.get(_MODULE)
    if module is not None:
        _patch(module, patcher)
        return
    finder = _PatchOnImport(patcher)
    sys.meta_path.insert(0, finder)
    patcher.add_cleanup(lambda: finder in sys.meta_path and sys.meta_path.remove(finder))
