"""An out-of-memory error in backward is raised from backward(), not an abort of the process."""

from pathlib import Path

import maya

SCRIPT = Path(__file__).parent / "scripts" / "oom_in_backward.py"


def test_oom_during_backward_surfaces_from_the_backward_call(tmp_path):
    s = maya.emulate(SCRIPT, trace_dir=tmp_path / "t")
    assert s.oom and s.exit_code == 1
    assert "torch.OutOfMemoryError" in s.error and "y.backward()" in s.error
