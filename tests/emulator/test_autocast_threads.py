"""CUDA autocast on the autograd engine's worker thread: a checkpoint recomputing its forward in backward."""

from pathlib import Path

import maya
from maya.trace import read_rank_trace

SCRIPT = Path(__file__).parent / "scripts" / "checkpoint_backward_in_autocast.py"


def test_recomputed_forward_under_autocast_runs_in_bf16(tmp_path):
    s = maya.emulate(SCRIPT, trace_dir=tmp_path / "t")
    assert s.exit_code == 0, s.error
    rows = read_rank_trace(s.trace_dir, 0).to_pylist()
    linear = [r for r in rows if r["op"] == "aten::addmm"]
    # Two in forward; the recomputation in backward stops early after the first (the second linear's
    # saved input is the GELU output). Every one is cast to bf16 by autocast, the recomputed one too.
    assert [r["phase"] for r in linear] == ["forward", "forward", "backward"]
    assert all(r["output_dtypes"] == ["bfloat16"] for r in linear)
