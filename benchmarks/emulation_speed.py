"""Emulation speed: Maya against bare FakeTensorMode on the same GPT-2-small training step.

    python benchmarks/emulation_speed.py [--steps 3]

Both run in this process, in fp32: first bare `FakeTensorMode` (CPU fake tensors, a counting
dispatch mode, examples/train_gpt.py's model, forward + backward + clipping + AdamW foreach step),
then Maya emulating examples/train_gpt.py itself with the same sizes. Each rate is aten ops reaching the dispatch mode per
second of wall time, model construction included. Prints both rates and Maya's share of the bare rate.
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode

ROOT = Path(__file__).parents[1]
SCRIPT = ROOT / "examples" / "train_gpt.py"


class _Count(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops += 1
        return func(*args, **(kwargs or {}))


def bare_rate(steps: int) -> tuple[int, float]:
    """The example's model and fp32 training step under bare FakeTensorMode, on CPU fake tensors."""
    spec = importlib.util.spec_from_file_location("train_gpt", SCRIPT)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    args = example.parse_args([])
    counter = _Count()
    start = time.perf_counter()
    with FakeTensorMode(allow_non_fake_inputs=True), counter:
        model = example.GPT(args)
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, foreach=True)
        for _ in range(steps):
            idx = torch.randint(0, args.vocab, (args.batch, args.seq))
            example.loss_fn(model(idx), idx).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
    return counter.ops, time.perf_counter() - start


def main() -> None:
    from maya.emulator.runner import run_script  # registers the proxy device before any backward
    from maya.emulator.state import RankConfig
    from maya.hardware import load_gpu

    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=3)
    args = p.parse_args()
    ops, seconds = bare_rate(args.steps)
    print(f"bare FakeTensorMode: {ops} ops in {seconds:.2f} s = {ops / seconds:,.0f} ops/s")

    start = time.perf_counter()
    outcome = run_script(SCRIPT, ["--steps", str(args.steps), "--precision", "fp32"], RankConfig(gpu=load_gpu("h200")))
    maya_seconds = time.perf_counter() - start
    if outcome.exit_code:
        raise SystemExit(outcome.error)
    maya_ops = outcome.state.dispatched_ops
    print(f"Maya emulation:      {maya_ops} ops in {maya_seconds:.2f} s = {maya_ops / maya_seconds:,.0f} ops/s")
    print(f"Maya keeps {maya_ops / maya_seconds / (ops / seconds):.0%} of the bare FakeTensorMode rate")


if __name__ == "__main__":
    main()
