"""The MoE validation workload with its data-dependent expert sizes, and again with fixed ones.

`benchmarks/validation/workloads/moe.py` gathers each expert's tokens with `torch.where` on the
router's choice, so on a GPU every expert GEMM has an M that changes from step to step (the router is
untrained and the tokens random). Maya's emulation cannot know the router's values and gives every
expert its expected share, the same every step. This probe runs the workload as it is (`dynamic`)
and with each expert's `torch.where` result (still computed, so the host still waits for it) replaced
by a fixed set of that expected size, N * top_k / experts distinct tokens (`fixed`): the same ops, the
same host synchronisation, the GPU work of the balanced case, only the shapes no longer change.
The difference between the two step times is what changing shapes cost the host; how it moves over
the 60 steps says whether it lasts (cuBLAS keeps what it looked up, so sizes seen before cost less).

In `dynamic` mode the probe also records every expert's token count, in call order (`expert_sizes`:
layers x experts per step, warm-up steps included). Each mode runs in its own process (its own cuBLAS heuristic cache), alternating, `--repeats` times.
Only the standard library and torch are imported. From the repository root on the GPU machine:

    python3 benchmarks/gpu/moe_fixed_shapes_probe.py --out OUT_DIR

writes OUT_DIR/moe_fixed_shapes.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD = ROOT / "benchmarks" / "validation" / "workloads" / "moe.py"
ARGV = ["--batch-size", "8", "--seq-len", "1024", "--num-experts", "8", "--top-k", "2", "--steps", "60",
        "--log-interval", "1000"]
"""The validation workload's arguments (`benchmarks/validation/suite.py`), with 60 measured steps after its
4 warm-up steps instead of 12: whether the step time settles as the shapes recur."""

CHILD = r"""
import importlib.util, sys, torch
spec = importlib.util.spec_from_file_location("moe_workload", sys.argv[1])
moe = importlib.util.module_from_spec(spec)
spec.loader.exec_module(moe)
if sys.argv[2] == "fixed":
    real_where = torch.where

    def forward(self, x):
        B, T, C = x.shape
        x = x.view(-1, C)
        N = x.shape[0]
        share = N * self.top_k // self.num_experts
        probs = torch.nn.functional.softmax(self.router(x).float(), dim=-1)
        weights, selected = torch.topk(probs, self.top_k, dim=-1)
        weights = (weights / weights.sum(dim=-1, keepdim=True)).to(x.dtype)
        out = torch.zeros_like(x)
        expert_mask = torch.nn.functional.one_hot(selected, self.num_experts).permute(2, 1, 0)
        for e, expert in enumerate(self.experts):
            real_where(expert_mask[e])  # the host still waits for the data-dependent size
            token = (torch.arange(share, device=x.device) + e * share // 2) % N
            slot = torch.arange(share, device=x.device) % self.top_k
            y = expert(x[token]) * weights[token, slot, None]
            out.index_add_(0, token, y.to(out.dtype))
        fraction = expert_mask.sum(dim=(1, 2)).float() / (x.shape[0] * self.top_k)
        aux_loss = self.num_experts * (fraction * probs.mean(dim=0)).sum()
        return out.view(B, T, C), aux_loss

    moe.SparseMoE.forward = forward
else:  # record each expert's size (on the host already: where's result is shaped by it)
    import atexit, json
    real_where, sizes = torch.where, []

    def where(*args, **kwargs):
        out = real_where(*args, **kwargs)
        if len(args) == 1 and not kwargs:
            sizes.append(int(out[0].shape[0]))
        return out

    torch.where = where
    atexit.register(lambda: print("EXPERT_SIZES " + json.dumps(sizes)))
moe.main(sys.argv[3:])
"""


def run(mode: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(WORKLOAD), mode, *ARGV], capture_output=True, text=True,
                          timeout=300)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("MAYA_RESULT ")), None)
    if proc.returncode != 0 or line is None:
        return {"mode": mode, "error": proc.stderr[-2000:]}
    sizes = next((ln for ln in proc.stdout.splitlines() if ln.startswith("EXPERT_SIZES ")), None)
    extra = {"expert_sizes": json.loads(sizes[len("EXPERT_SIZES "):])} if sizes else {}
    return {"mode": mode, **json.loads(line[len("MAYA_RESULT "):]), **extra}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--repeats", type=int, default=2)
    args = p.parse_args()
    import torch

    runs = []
    for _ in range(args.repeats):
        for mode in ("dynamic", "fixed"):
            runs.append(run(mode))
            print(mode, runs[-1].get("median_step_ms", runs[-1].get("error")), flush=True)
    result = {
        "gpu_name": torch.cuda.get_device_name(), "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": f"python3 {WORKLOAD.relative_to(ROOT)} {' '.join(ARGV)} (dynamic; fixed: see the probe)",
        "runs": runs,
    }
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "moe_fixed_shapes.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
