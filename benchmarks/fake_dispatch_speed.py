"""Fake-tensor dispatch: EmulatorFakeMode's shortcuts against FakeTensorMode's own paths.

Prints, on this machine: the time to build the dispatch-cache key of one `mm` (two tensors), the
time of one in-place foreach op over 40 tensors, and the wall time of one emulation of a pipeline
corner of the Llama-70B-class study (examples/tune_llama.py: pp=8 1F1B, FSDP, 16 blocks, 9
micro-batches, 64 H100s; 8 stages and a probe rank, in this process), each with the shortcuts and
with FakeTensorMode's own code (maya/emulator/fake_mode.py).

    python benchmarks/fake_dispatch_speed.py
    python benchmarks/fake_dispatch_speed.py --skip-world     # the two op timings only (seconds)
"""

import argparse
import contextlib
import json
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORNER = ("--steps 1 --seq 4096 --dim 8192 --layers 16 --heads 64 --vocab 128256 --precision bf16 --init-device meta "
          "--accum 9 --checkpoint none --dp fsdp --batch 1 --pp 8 --pp-schedule 1f1b --tp 1").split()


def _per_call_us(fn, calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - started) / calls * 1e6


@contextlib.contextmanager
def shortcuts(enabled: bool):
    """With `enabled` False, EmulatorFakeMode runs FakeTensorMode's own cache key and in-place path."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from maya.emulator import fake_mode

    saved = fake_mode.EmulatorFakeMode._prep_args_for_hash, fake_mode._is_inplace_foreach
    if not enabled:
        fake_mode.EmulatorFakeMode._prep_args_for_hash = FakeTensorMode._prep_args_for_hash
        fake_mode._is_inplace_foreach = lambda func: False
    try:
        yield
    finally:
        fake_mode.EmulatorFakeMode._prep_args_for_hash, fake_mode._is_inplace_foreach = saved


def op_timings() -> dict:
    import torch
    from torch._subclasses.fake_tensor import _CacheKeyState

    from maya.emulator.fake_mode import EmulatorFakeMode

    mode = EmulatorFakeMode()
    with mode:
        a, b = torch.empty(4096, 8192), torch.empty(8192, 8192)
        tensors = [torch.empty(1024, 1024) for _ in range(40)]
    state = _CacheKeyState(mode.shape_env)
    return {
        "mm_cache_key_us": round(_per_call_us(lambda: mode._cache_key(state, torch.ops.aten.mm.default, (a, b), {}), 5000), 1),
        "foreach_mul__40_tensors_us": round(_per_call_us(lambda: _in_mode(mode, torch._foreach_mul_, tensors, 0.9), 200), 1),
    }


def _in_mode(mode, fn, *args):
    with mode:
        return fn(*args)


def world_seconds() -> float:
    """Wall time of the second of two emulations of the pipeline corner (the first warms imports and caches)."""
    from maya.api import emulate

    for _ in range(2):
        started = time.perf_counter()
        emulate(str(ROOT / "examples" / "train_gpt.py"), CORNER, gpu="h100", nnodes=8, nproc_per_node=8,
                trace_dir=tempfile.mkdtemp(), in_process=True)
    return round(time.perf_counter() - started, 2)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--skip-world", action="store_true", help="only the op timings")
    args = p.parse_args()
    figures = {}
    for name, enabled in (("shortcuts", True), ("fake_tensor_mode", False)):
        with shortcuts(enabled):
            figures[name] = op_timings()
            if not args.skip_world:
                figures[name]["pipeline_corner_emulation_s"] = world_seconds()
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
