"""Compatibility shims for Hugging Face transformers.

transformers asks `is_fake_tensor(x)` to decide whether it is being traced, and when it is, it
builds explicit attention masks and repeats k/v heads instead of letting SDPA handle causality and
grouped-query attention; on a real GPU it does neither. Under emulation, the emulated CUDA tensors
are answered as real ones. The patch applies when the module is imported, before or after the
emulation starts.

Beam search (`GenerationMixin._beam_search`) decodes while a beam's score could still beat the worst
finished beam, a comparison of scores no emulated tensor knows. Under emulation no beam finishes
before the length limit (no generated token is an end-of-sequence token: `value_hints`' `isin`
rule), so that comparison always holds, and the loop's condition is replaced by its one part that
stays known: the stopping criteria (the length limit) have not all hit. The search then decodes as
many steps as on a GPU whose beams never finish early, as greedy and sampling `generate` do.
"""

from __future__ import annotations

import torch

from maya.emulator.fake_mode import is_emulated_cuda
from maya.emulator.patcher import Patcher

_MODULE = "transformers.utils.import_utils"


def _patch(module: object, patcher: Patcher) -> None:
    original = module.is_fake_tensor

    def is_fake_tensor(x) -> bool:
        return not is_emulated_cuda(x) and original(x)

    patcher.set(module, "is_fake_tensor", is_fake_tensor)


def _beam_search_runs_to_its_length_limit(module: object, patcher: Patcher) -> None:
    mixin = getattr(module, "GenerationMixin", None)
    original = getattr(mixin, "_beam_search_has_unfinished_sequences", None)
    if original is None:
        return

    def _beam_search_has_unfinished_sequences(is_early_stop_heuristic_unsatisfied, is_sent_finished,
                                              next_token_hits_stopping_criteria, early_stopping):
        if not is_emulated_cuda(next_token_hits_stopping_criteria):  # a search on real (CPU) tensors
            return original(is_early_stop_heuristic_unsatisfied, is_sent_finished,
                            next_token_hits_stopping_criteria, early_stopping)
        return ~torch.all(next_token_hits_stopping_criteria)

    patcher.set(mixin, "_beam_search_has_unfinished_sequences", staticmethod(_beam_search_has_unfinished_sequences))


def install_compat(patcher: Patcher) -> None:
    """Apply the shims now for imported modules, and on import for the others; `patcher` undoes them."""
    patcher.after_import(_MODULE, lambda module: _patch(module, patcher))
    patcher.after_import("transformers.generation.utils", lambda module: _beam_search_runs_to_its_length_limit(module, patcher))
