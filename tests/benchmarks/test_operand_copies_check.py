"""benchmarks/operand_copies_check.py: the copies the emulation records inside CUDA ops match real profiles."""

import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import operand_copies_check as check  # noqa: E402


@pytest.mark.parametrize("name, trace, op, copies", [
    # The fp32 U-Net on an H100: 32 contiguous() and 6 .to(memory_format) copies under its 77
    # convolution backwards (skip connections' sliced gradients, channels-last attention outputs).
    ("unet_fp32_128px", "session39/s39b/op_times", "aten::convolution_backward", 38),
    # torch_transformer_bf16 on an H200: 8 strided gradients under its 16 layer-norm backwards.
    ("torch_transformer_bf16", "op_times_h200", "aten::native_layer_norm_backward", 8),
])
def test_the_emulation_records_the_copies_a_real_profiled_step_makes(name, trace, op, copies):
    real = check.profiled_copies(ROOT / "benchmarks" / "gpu" / trace / f"{name}.trace.json.gz", check._op_names())
    with tempfile.TemporaryDirectory() as tmp:
        maya = check.emulated_copies(check.emulated_trace(name, Path(tmp)))
    assert real == {op: copies}
    assert maya == real
