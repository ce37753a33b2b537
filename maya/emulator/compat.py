"""Compatibility shims for Hugging Face transformers.

transformers asks `is_fake_tensor(x)` to decide whether it is being traced, and when it is, it
builds explicit attention masks and repeats k/v heads instead of letting SDPA handle causality and
grouped-query attention; on a real GPU it does neither. Under emulation, the emulated CUDA tensors
are answered as real ones. The patch applies when the module is imported, before or after the
emulation starts.

Beam search (`GenerationMixin._beam_search`) cannot be emulated faithfully: it decodes while a
beam's score could still improve, a comparison of scores no emulated tensor knows, so under
emulation it stops after one step and cuts its sequences to one token (an integer read of unknown
values gives 1). Each emulation that runs it warns once, naming it, instead of answering silently.
"""

from __future__ import annotations

import functools
import logging

from maya.emulator.fake_mode import is_emulated_cuda
from maya.emulator.patcher import Patcher

_MODULE = "transformers.utils.import_utils"
logger = logging.getLogger(__name__)


def _patch(module: object, patcher: Patcher) -> None:
    original = module.is_fake_tensor

    def is_fake_tensor(x) -> bool:
        return not is_emulated_cuda(x) and original(x)

    patcher.set(module, "is_fake_tensor", is_fake_tensor)


BEAM_SEARCH_WARNING = (
    "transformers.generation.utils.GenerationMixin._beam_search (generate with num_beams > 1) is not "
    "emulated faithfully: its loop goes on while a beam's score could still improve, which no emulated "
    "value tells, so it decodes one step where a GPU decodes up to max_new_tokens and returns sequences "
    "cut to one token; greedy and sampling generate run to max_new_tokens"
)


def _warn_on_beam_search(module: object, patcher: Patcher) -> None:
    mixin = getattr(module, "GenerationMixin", None)
    original = getattr(mixin, "_beam_search", None)
    if original is None:
        return
    warned = []

    def _beam_search(self, *args, **kwargs):
        if not warned:
            warned.append(True)
            logger.warning(BEAM_SEARCH_WARNING)
        return original(self, *args, **kwargs)

    patcher.set(mixin, "_beam_search", functools.wraps(original)(_beam_search))


def install_compat(patcher: Patcher) -> None:
    """Apply the shims now for imported modules, and on import for the others; `patcher` undoes them."""
    patcher.after_import(_MODULE, lambda module: _patch(module, patcher))
    patcher.after_import("transformers.generation.utils", lambda module: _warn_on_beam_search(module, patcher))
