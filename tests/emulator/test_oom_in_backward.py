"""An out-of-memory error in backward is raised from backward(), not an abort of the process."""

from pathlib import Path

import maya

SCRIPT = Path(__file__).parent / "scripts" / "oom_in_backward.py"


def test_oom_during_backward_surfaces_from_the_backward_call(tmp_path):
    s = maya.emulate(SCRIPT, trace_dir=tmp_path / "t")
    assert s.oom and s.exit_code == 1
    assert "torch.OutOfMemoryError" in s.error and "y.backward()" in s.error


def test_oom_in_forward_off_the_main_thread_raises_at_the_forward(tmp_path):
    # A Ray Tune trial runs its script on a thread that is not Python's main thread. Deferring a
    # forward OOM there (as inside backward) let the forward go on, and a pipeline's backward after
    # it aborted the process; it must raise at the op, as on the main thread.
    import threading

    result = {}
    worker = threading.Thread(target=lambda: result.update(s=maya.emulate(SCRIPT.with_name("oom_in_forward.py"),
                                                                            trace_dir=tmp_path / "t")))
    worker.start()
    worker.join()
    s = result["s"]
    assert s.oom and s.exit_code == 1
    assert "torch.OutOfMemoryError" in s.error and "y = m(x).sum()" in s.error and "y.backward()" not in s.error
