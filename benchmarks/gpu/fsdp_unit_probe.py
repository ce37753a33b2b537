"""Host time of one FSDP2 unit's forward and backward, as train_gpt.py shards them, over a mesh of every rank.

maya/estimator/framework_overhead.py measures FSDP2 on a one-rank mesh, where FSDP2 skips its all-gather
and reduce-scatter paths (`world_size == 1` in _fsdp_param_group.py and _fsdp_collectives.py), without a
mixed-precision policy and without autocast. This probe takes train_gpt.py's setting instead: every rank
of the job in the mesh, MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32), autocast to bf16.
For two block kinds (Linear(768, 768)+ReLU: 2 parameters; train_gpt.Block(768, 12 heads): 12 parameters)
it times, on rank 0, the host issue time (time.perf_counter, no synchronisation inside) of
forward+backward of a stack of `--depth` blocks plus the root, each its own `fully_shard` unit, less the
same stack without FSDP2, per unit. The inputs are small (1 x `--seq` tokens), so the GPU keeps up.
The extra GPU ops that FSDP2 issues are counted (TorchDispatchMode) so that a consumer can take off
what it charges for them separately.

    NCCL_NVLS_ENABLE=0 torchrun --nproc-per-node 2 benchmarks/gpu/fsdp_unit_probe.py --out fsdp_unit_2.json
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import train_gpt  # noqa: E402

WIDTH = 768
"""GPT-2 small's width, as in benchmarks/gpu/measure_train_gpt.py."""


class _KernelCounter(TorchDispatchMode):
    """Counts the non-view aten ops that reach the dispatcher."""

    def __init__(self) -> None:
        super().__init__()
        self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not getattr(func, "is_view", False):
            self.ops += 1
        return func(*args, **(kwargs or {}))


def issue_ms(step, n: int) -> float:
    """Median host issue time of `step` (ms) over `n` calls, each followed by an untimed synchronize."""
    times = []
    for i in range(n + 5):
        start = time.perf_counter()
        step()
        elapsed = time.perf_counter() - start
        torch.cuda.synchronize()
        if i >= 5:
            times.append(elapsed * 1e3)
    return statistics.median(times)


def probe(kind: str, depth: int, seq: int, mesh, iterations: int) -> dict:
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    def make():
        if kind == "linear_relu":
            return torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU())
        return train_gpt.Block(WIDTH, 12)

    torch.manual_seed(0)
    plain = torch.nn.Sequential(*[make() for _ in range(depth)]).cuda()
    sharded = torch.nn.Sequential(*[make() for _ in range(depth)]).cuda()
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for block in sharded:
        fully_shard(block, mesh=mesh, mp_policy=mp)
    fully_shard(sharded, mesh=mesh, mp_policy=mp)
    inp = torch.randn(1, seq, WIDTH, device="cuda")

    def step(model):
        def run():
            with torch.autocast("cuda", dtype=torch.bfloat16):
                out = model(inp)
            out.float().sum().backward()
        return run

    counts = {}
    for name, model in (("plain", plain), ("fsdp", sharded)):
        step(model)()
        torch.cuda.synchronize()
        with _KernelCounter() as counter:
            step(model)()
        counts[name] = counter.ops
    plain_ms = issue_ms(step(plain), iterations)
    fsdp_ms = issue_ms(step(sharded), iterations)
    units = depth + 1
    return {
        "kind": kind, "params_per_unit": sum(1 for _ in plain[0].parameters()), "units": units,
        "plain_issue_ms": plain_ms, "fsdp_issue_ms": fsdp_ms,
        "extra_us_per_unit": (fsdp_ms - plain_ms) * 1e3 / units,
        "extra_gpu_ops_per_unit": (counts["fsdp"] - counts["plain"]) / units,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--depth", type=int, default=8)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--iterations", type=int, default=40)
    args = p.parse_args()
    from torch.distributed.device_mesh import init_device_mesh

    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl")
    mesh = init_device_mesh("cuda", (dist.get_world_size(),))
    results = [probe(kind, args.depth, args.seq, mesh, args.iterations) for kind in ("linear_relu", "block")]
    (a, b) = results
    per_param = (b["extra_us_per_unit"] - a["extra_us_per_unit"]) / (b["params_per_unit"] - a["params_per_unit"])
    if dist.get_rank() == 0:
        out = {
            "command": f"torchrun --nproc-per-node {dist.get_world_size()} benchmarks/gpu/fsdp_unit_probe.py "
                       + " ".join(sys.argv[1:]),
            "world_size": dist.get_world_size(), "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
            "cuda": torch.version.cuda, "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "probes": results,
            "unit_per_param_us": per_param, "unit_fixed_us": a["extra_us_per_unit"] - per_param * a["params_per_unit"],
        }
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
        print(json.dumps(out), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
