"""benchmarks/profiler_ops.py: trace op names map onto the profiler's per-op keys."""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("profiler_ops", ROOT / "benchmarks" / "profiler_ops.py")
profiler_ops = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(profiler_ops)


def test_overloads_and_launching_ops_map_to_profiler_keys():
    key = profiler_ops.profiler_key
    assert key("aten::add.Tensor") == "aten::add"
    assert key("aten::_foreach_add_.List") == "aten::_foreach_add_"
    assert key("aten::_to_copy") == key("aten::clone") == "aten::copy_"
    assert key("aten::relu") == "aten::clamp_min"
    assert key("aten::_scaled_dot_product_cudnn_attention_backward") == "aten::_cudnn_attention_backward"
    assert key("aten::mm") == "aten::mm"
    # The emulator records the batch norm the GPU runs (maya/emulator/batch_norm.py): cuDNN's for
    # float32, PyTorch's native kernel for bfloat16 input, as the H200's profiles name them.
    assert key("aten::native_batch_norm") == "aten::native_batch_norm"
    assert key("aten::cudnn_batch_norm_backward") == "aten::cudnn_batch_norm_backward"


def test_every_mapped_key_is_one_the_h200_profiles_use():
    profiled = set()
    for path in (ROOT / "benchmarks" / "gpu" / "op_times_h200").glob("*.json"):
        profiled |= set(json.loads(path.read_text())["per_op"])
    targets = set(profiler_ops.TRACE_TO_PROFILER.values())
    assert targets <= profiled, targets - profiled
