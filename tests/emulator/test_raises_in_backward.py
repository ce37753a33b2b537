"""An exception raised inside a backward pass ends the script with its traceback, not an abort.

That includes an aten op of a C++ backward node that Maya cannot emulate: raised from the dispatch
mode there, it aborted the process with rc 134 and no message, until the recorder deferred it too.

PyTorch's autograd engine runs a device's backward on its own thread, under a stream guard whose
destructor calls back into Python (Maya's device is registered from Python); an exception leaving a
tensor hook there aborted the process with no traceback (a custom Function's backward did not; both
are checked). Each case runs as a separate process, so that an abort fails the test instead of
killing the suite.
"""

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent / "scripts" / "raises_in_backward.py"


@pytest.mark.parametrize(("where", "message", "line"), [
    ("hook", "ValueError: the hook refuses", 'raise ValueError("the hook refuses")'),
    ("function", "ValueError: the function's backward refuses", "raise ValueError(\"the function's backward refuses\")"),
    ("op", "Maya cannot emulate aten::multilabel_margin_loss_backward", "y.sum().backward()"),
])
def test_an_exception_in_backward_ends_the_script_with_its_traceback(tmp_path, where, message, line):
    done = subprocess.run(
        [sys.executable, "-m", "maya", "emulate", "--trace-dir", str(tmp_path / "t"), str(SCRIPT), "--where", where],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 1, done.stderr[-2000:]
    assert message in done.stderr and line in done.stderr and "y.sum().backward()" in done.stderr
    assert "bwd ok" not in done.stdout


def test_a_backward_pass_frees_its_last_buffers_at_the_same_row_on_a_busy_machine(tmp_path):
    # The autograd engine's device thread may let go of a pass's last buffers after backward returned:
    # without `settle_autograd`, 11 of 12 emulations of this rank under two CPU burners differed
    # (the freed input gradient of a micro-batch moved between rows).
    import subprocess
    import sys

    from maya.world.rank_emulation import emulate_rank

    script = tmp_path / "grads.py"
    script.write_text(
        "import torch\n"
        "layer = torch.nn.Linear(40, 256).cuda()\n"
        "for _ in range(3):\n"
        "    x = torch.randn(8, 40, device='cuda', requires_grad=True)\n"
        "    (grad,) = torch.autograd.grad(layer(x).square().mean(), [x])\n"
        "    del grad\n"
        "    torch.empty(1024, device='cuda')\n"
    )
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        runs = [[r["allocated_bytes"] for r in emulate_rank(str(script), [], "h200", 0, 1, 1).table.to_pylist()]
                for _ in range(8)]
    finally:
        for b in burners:
            b.kill()
    assert all(run == runs[0] for run in runs)
