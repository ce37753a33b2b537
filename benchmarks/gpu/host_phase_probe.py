"""Where the host (CPU) time of a suite workload's step goes on a real GPU: per phase, and per aten op.

Two passes per named workload (benchmarks/validation/suite.py), each a fresh run of its script:

1. Phases. Global hooks note time.perf_counter at the first module forward of a step, around
   torch.autograd.backward, and around optimizer.step. Per measured step this gives the host time
   to issue the forward (and loss), the backward, and the optimizer step, and the host time from one
   step's first forward to the next one's (the whole host step). The script's own CUDA-event step
   times come from its MAYA_RESULT line. A step whose host step is close to its CUDA-event time is
   host-bound: the GPU waited for launches. A CUDA event is recorded at each of those marks too
   (`gpu_phases`): the GPU time from one mark to the next, which exceeds the GPU's kernel time of
   that phase where the GPU waited for the host (or for a sync).
2. Ops. A TorchDispatchMode notes perf_counter when each aten op of one iteration (`--iteration`)
   enters dispatch, with its thread (the autograd engine runs backward ops on its own thread) and
   whether it ran in backward. The gap from one op's entry to the next one's on the same thread is
   the host time of the op plus the Python between them. The mode's own cost per op is measured
   (a chain of `x.add_(1)` on one element with and without the mode) and recorded, not subtracted.

Only torch and the standard library are imported. Run from the repository root on a GPU machine:

    python3 benchmarks/gpu/host_phase_probe.py --out DIR moe_top2_bf16 vit_base_bf16 ...

It writes DIR/<workload>.json.gz (gzipped JSON) for each workload and DIR/mode_overhead.json.
"""

import argparse
import contextlib
import gzip
import io
import json
import runpy
import sys
import threading
import time
from pathlib import Path

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, str(Path(__file__).parents[1] / "validation"))
import suite  # noqa: E402


class _Phases:
    """perf_counter marks of every step: forward start, backward start/end, optimizer start/end."""

    def __init__(self):
        self.steps, self.current, self.events = [], None, []

    def _mark(self, name):
        """perf_counter now, and a CUDA event on the current stream at this point of the step."""
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        self.events.append((len(self.steps), name, event))
        return time.perf_counter()

    def gpu_phases(self):
        """Per step, the GPU milliseconds from each mark to the next (the last to the next step's forward)."""
        torch.cuda.synchronize()
        out = [{} for _ in self.steps]
        for (step, name, event), (_, _, following) in zip(self.events, self.events[1:]):
            if step < len(out):
                out[step][name + "_ms"] = event.elapsed_time(following)
        return out

    def forward_pre(self, module, args):
        if self.current is None:
            self.current = {"forward": self._mark("forward")}

    def backward(self, original):
        def wrapped(*args, **kwargs):
            if self.current is not None and "backward" not in self.current:
                self.current["backward"] = self._mark("backward")
                out = original(*args, **kwargs)
                self.current["backward_end"] = self._mark("backward_end")
                return out
            return original(*args, **kwargs)
        return wrapped

    def optimizer_pre(self, *a):
        if self.current is not None:
            if "optimizer" not in self.current:
                self.current["optimizer"] = self._mark("optimizer")

    def optimizer_post(self, *a):
        if self.current is not None:
            self.current["optimizer_end"] = self._mark("optimizer_end")
            self.steps.append(self.current)
            self.current = None


class _OpEntries(TorchDispatchMode):
    def __init__(self, iteration):
        super().__init__()
        self.iteration, self.current, self.rows = iteration, 0, []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self.current == self.iteration:
            self.rows.append((time.perf_counter(), str(func), threading.get_ident(),
                              torch._C._current_autograd_node() is not None))
        return func(*args, **(kwargs or {}))


def _run(w, extra):
    """Run the workload's script; its MAYA_RESULT (CUDA-event step times, peak memory), or None."""
    sys.argv = [str(suite.WORKLOADS_DIR / w.script), *w.argv, *extra]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        runpy.run_path(sys.argv[0], run_name="__main__")
    lines = [line for line in printed.getvalue().splitlines() if line.startswith("MAYA_RESULT ")]
    return json.loads(lines[-1].removeprefix("MAYA_RESULT ")) if lines else None


def mode_overhead_us(n=4000):
    x = torch.zeros(1, device="cuda")
    for _ in range(200):
        x.add_(1)
    torch.cuda.synchronize()

    def chain():
        t = time.perf_counter()
        for _ in range(n):
            x.add_(1)
        torch.cuda.synchronize()
        return (time.perf_counter() - t) / n * 1e6

    plain = min(chain() for _ in range(5))
    with _OpEntries(iteration=0):
        moded = min(chain() for _ in range(5))
    return {"plain_add_us": plain, "with_mode_add_us": moded, "mode_overhead_us": moded - plain}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--iteration", type=int, default=6, help="iteration whose ops are timed in pass 2")
    p.add_argument("workloads", nargs="+")
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
           "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "command": "python3 benchmarks/gpu/host_phase_probe.py " + " ".join(sys.argv[1:])}
    (out / "mode_overhead.json").write_text(json.dumps({**env, **mode_overhead_us()}, indent=1))
    for name in args.workloads:
        w = next(w for w in suite.WORKLOADS if w.name == name)
        phases = _Phases()
        hooks = [torch.nn.modules.module.register_module_forward_pre_hook(phases.forward_pre),
                 register_optimizer_step_pre_hook(phases.optimizer_pre),
                 register_optimizer_step_post_hook(phases.optimizer_post)]
        original = torch.autograd.backward
        torch.autograd.backward = phases.backward(original)
        try:
            result = _run(w, ["--steps", "8", "--warmup", "4"])
        finally:
            torch.autograd.backward = original
            for h in hooks:
                h.remove()
        torch.cuda.synchronize()
        steps = phases.steps
        rows = []
        gpu = phases.gpu_phases()
        for i, s in enumerate(steps):
            row = {"forward_ms": (s.get("backward", s["optimizer"]) - s["forward"]) * 1e3,
                   "backward_ms": (s["backward_end"] - s["backward"]) * 1e3 if "backward_end" in s else None,
                   "optimizer_ms": (s["optimizer_end"] - s["optimizer"]) * 1e3}
            if i + 1 < len(steps):
                row["host_step_ms"] = (steps[i + 1]["forward"] - s["forward"]) * 1e3
            row["gpu_phases"] = gpu[i]
            rows.append(row)

        mode = _OpEntries(args.iteration)
        hook = register_optimizer_step_post_hook(lambda *a: setattr(mode, "current", mode.current + 1))
        try:
            with mode:
                _run(w, ["--steps", "2", "--warmup", str(args.iteration)])
        finally:
            hook.remove()
        torch.cuda.synchronize()
        t0 = mode.rows[0][0] if mode.rows else 0.0
        threads = {}
        ops = [{"op": op, "t_us": (t - t0) * 1e6, "thread": threads.setdefault(tid, len(threads)), "backward": bw}
               for t, op, tid, bw in mode.rows]
        (out / f"{name}.json.gz").write_bytes(gzip.compress(json.dumps({**env, "workload": name, "argv": list(w.argv),
                                                      "steps": rows, "cuda_event_step_ms": (result or {}).get("step_ms"), "op_iteration": args.iteration, "ops": ops}).encode(), mtime=0))
        print(name, "steps", len(rows), "ops", len(ops), flush=True)


if __name__ == "__main__":
    main()
