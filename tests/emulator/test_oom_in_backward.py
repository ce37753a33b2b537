"""An out-of-memory error in backward is raised from backward(), not an abort of the process."""

from pathlib import Path

import maya

SCRIPT = Path(__file__).parent / "scripts" / "oom_in_backward.py"


def test_oom_during_backward_surfaces_from_the_backward_call(tmp_path):
    s = maya.emulate(SCRIPT, trace_dir=tmp_path / "t")
    assert s.oom and s.exit_code == 1
    assert "torch.OutOfMemoryError" in s.error and "y.backward()" in s.error
    # The message says whose allocation failed: the checkpoint's recomputation of the last layer.
    assert "Maya: the allocation was aten::addmm's, in module `2`, in the backward pass of iteration 0." in s.error


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


def test_oom_growing_a_storage_in_a_backward_hook_raises_from_backward(tmp_path):
    # FSDP2's unshard grows freed storages back with `UntypedStorage.resize_`, in backward hooks on the
    # autograd engine's device thread. An OOM there is deferred; the resize went on to record a block
    # it did not have, and the UnboundLocalError it raised in the hook aborted the process (the stream
    # guard's destructor calls back into Python with the error set): two Llama-study trials, pipelines
    # of 8 interleaved stages under FSDP2 with checkpointing, 2026-12-02. Run as a separate process, so
    # that an abort fails this test instead of killing the suite.
    import subprocess
    import sys

    script = SCRIPT.with_name("oom_resize_in_backward.py")
    done = subprocess.run([sys.executable, "-m", "maya", "emulate", "--trace-dir", str(tmp_path / "t"), str(script)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "torch.OutOfMemoryError" in done.stderr and "y.sum().backward()" in done.stderr
    assert "OUT OF MEMORY" in done.stdout + done.stderr
