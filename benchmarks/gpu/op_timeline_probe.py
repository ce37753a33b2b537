"""Record, on a real GPU, every aten op of one training iteration with the allocator's state after it.

This is the ground truth the emulator's trace is compared with, op by op: which ops run, in which
dtypes and shapes, and what `torch.cuda.memory_allocated()` is after each. Run from the repository
root on a machine with an NVIDIA GPU:
    python3 benchmarks/gpu/op_timeline_probe.py --out DIR gpt2_124m_bf16 llama_150m_bf16 ...
It writes DIR/<workload>.json for each named suite workload (benchmarks/validation/suite.py).
"""

import argparse
import json
import runpy
import sys
from pathlib import Path

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, str(Path(__file__).parents[1] / "validation"))
import suite  # noqa: E402


class _Timeline(TorchDispatchMode):
    def __init__(self, iteration: int):
        super().__init__()
        self.iteration, self.current, self.rows = iteration, 0, []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if self.current == self.iteration:
            outs = out if isinstance(out, (list, tuple)) else (out,)
            self.rows.append({
                "op": str(func),
                "out": [[list(t.shape), str(t.dtype).removeprefix("torch.")] for t in outs if isinstance(t, torch.Tensor)],
                "allocated": torch.cuda.memory_allocated(),
                "phase": "backward" if torch._C._current_autograd_node() is not None else "",
            })
        return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--iteration", type=int, default=5)
    p.add_argument("workloads", nargs="+")
    args = p.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    for name in args.workloads:
        w = next(w for w in suite.WORKLOADS if w.name == name)
        mode = _Timeline(args.iteration)
        hook = register_optimizer_step_post_hook(lambda *a: setattr(mode, "current", mode.current + 1))
        sys.argv = [str(suite.WORKLOADS_DIR / w.script), *w.argv, "--steps", "2", "--warmup", "4"]
        try:
            with mode:
                runpy.run_path(sys.argv[0], run_name="__main__")
        finally:
            hook.remove()
        torch.cuda.synchronize()
        Path(args.out, f"{name}.json").write_text(json.dumps({
            "workload": name, "argv": sys.argv[1:], "iteration": args.iteration, "gpu": torch.cuda.get_device_name(),
            "torch": torch.__version__, "rows": mode.rows,
        }))
        print(name, len(mode.rows), "ops; peak allocated in iteration",
              max((r["allocated"] for r in mode.rows), default=0) / 2**30, "GiB", flush=True)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


if __name__ == "__main__":
    main()
