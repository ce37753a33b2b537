"""SDPA backend choice against what a real H200 picked (benchmarks/gpu/sdpa_backends_h200.json)."""

import json
from pathlib import Path

import pytest
import torch

from maya.emulator.sdpa import Backend, choose_backend

PROBE = json.loads((Path(__file__).parents[2] / "benchmarks" / "gpu" / "sdpa_backends_h200.json").read_text())

# The probe's cases: dtype, q heads, kv heads, head dim, mask kind, mask requires grad.
CASES = {
    "bf16_causal_d64": (torch.bfloat16, 64, None, False),
    "bf16_causal_d128": (torch.bfloat16, 128, None, False),
    "fp16_causal_d64": (torch.float16, 64, None, False),
    "bf16_noncausal_d64": (torch.bfloat16, 64, None, False),
    "bf16_gqa_enable_gqa": (torch.bfloat16, 128, None, False),
    "bf16_float_mask": (torch.bfloat16, 64, "float", False),
    "bf16_bool_mask": (torch.bfloat16, 64, "bool", False),
    "bf16_float_mask_requires_grad": (torch.bfloat16, 64, "float", True),
    "fp32_causal_d64": (torch.float32, 64, None, False),
    "bf16_causal_d256": (torch.bfloat16, 256, None, False),
}


def _measured(name: str) -> Backend:
    ops = PROBE["cases"][name]["ops"]
    for backend, marker in ((Backend.CUDNN, "cudnn"), (Backend.FLASH, "flash"), (Backend.EFFICIENT, "efficient")):
        if any(f"_scaled_dot_product_{marker}_attention" in op for op in ops):
            return backend
    return Backend.MATH


@pytest.mark.parametrize("name", sorted(CASES))
def test_choice_matches_the_h200(name):
    dtype, head_dim, mask, mask_grad = CASES[name]
    chosen = choose_backend((9, 0), dtype, head_dim, head_dim, mask is not None, mask_grad)
    assert chosen is _measured(name)


def test_a100_prefers_flash_without_mask():
    assert choose_backend((8, 0), torch.bfloat16, 64, 64, False) is Backend.FLASH
    assert choose_backend((8, 0), torch.bfloat16, 64, 64, True) is Backend.EFFICIENT
