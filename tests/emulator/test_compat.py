"""Hugging Face transformers sees emulated CUDA tensors as real ones (`maya/emulator/compat.py`)."""

import torch

from maya.emulator.session import EmulationSession
from maya.emulator.state import RankConfig
from maya.hardware.gpu import load_gpu


def test_emulated_cuda_tensors_are_not_fake_to_transformers_and_the_shim_is_undone():
    import transformers.utils.import_utils as import_utils

    original = import_utils.is_fake_tensor
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))):
        x = torch.ones(4, device="cuda")
        # Seen as a traced tensor, it would make transformers build explicit masks and repeat k/v heads.
        assert import_utils.is_fake_tensor is not original and not import_utils.is_fake_tensor(x)
    assert import_utils.is_fake_tensor is original
