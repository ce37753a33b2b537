"""SDPA backend choice against what a real H200 picked (benchmarks/gpu/sdpa_backends_h200.json), and the
math backend that a mask without unit last-dim stride falls back to."""

import json
from pathlib import Path

import pytest
import torch

import maya
from maya.emulator.sdpa import Backend, choose_backend
from maya.trace import read_rank_trace

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


def test_no_fused_backend_without_unit_stride_in_the_last_dim():
    # check_last_dim_stride_equals_1_dense: q, k, v and the mask must all have stride 1 in their last dim.
    for capability in ((9, 0), (8, 0)):
        for has_mask in (False, True):
            chosen = choose_backend(capability, torch.bfloat16, 64, 64, has_mask, last_dim_stride_1=False)
            assert chosen is Backend.MATH


def test_a_permuted_position_bias_runs_attention_on_the_math_backend(scripts, tmp_path):
    # T5's bias in transformers 5.17 (the version of the H200 ground truth): hf_t5_bf16 measured
    # 15.31 GiB, predicted 9.48 GiB while the emulator took memory-efficient attention.
    permuted = maya.emulate(scripts / "relative_position_bias.py", trace_dir=tmp_path / "p")
    contiguous = maya.emulate(scripts / "relative_position_bias.py", ["--contiguous"], trace_dir=tmp_path / "c")
    assert permuted.exit_code == 0, permuted.error
    assert contiguous.exit_code == 0, contiguous.error
    ops = read_rank_trace(permuted.trace_dir, 0).to_pandas()
    ops = ops[ops.kind == "kernel"]
    assert not ops.op.str.contains("_attention").any()
    # The math backend upcasts bf16 to fp32: batch * heads = 32 fp32 score matrices of 256 x 256.
    scores = ops[(ops.op == "aten::bmm") & (ops.phase == "forward")]
    assert sum(list(shapes[0]) == [32, 256, 256] for shapes in scores.output_shapes) == 2  # one per step
    assert all(set(d) == {"float32"} for d in scores.input_dtypes)
    assert (ops.op == "aten::native_dropout").sum() == 2
    fused = read_rank_trace(contiguous.trace_dir, 0).to_pandas().op
    assert (fused == "aten::_scaled_dot_product_efficient_attention").sum() == 2
    # Kept for backward by the math path alone: the fp32 softmax output, the fp32 dropped
    # probabilities and the bool dropout mask, 8 * 4 * 256 * 256 elements each.
    probabilities_bytes = 8 * 4 * 256 * 256 * 4
    extra_bytes = permuted.iterations[-1].peak_allocated_bytes - contiguous.iterations[-1].peak_allocated_bytes
    assert extra_bytes >= 2.25 * probabilities_bytes
