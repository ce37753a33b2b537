"""Host cost of PyTorch's distributed frameworks (DTensor dispatch, FSDP2 units), measured on the GPU machine.

DTensor runs sharding propagation in Python for every op on a DTensor, and FSDP2 runs Python hooks
around every `fully_shard` unit; on a fast GPU a training step can be bound by them. Maya's trace
marks each DTensor op (`dtensor:op` host rows) and each FSDP2 unit's forward (`fsdp:unit`), and
charges them the figures measured here. A one-rank NCCL group on the local GPU is enough: the cost
is the Python around the collectives, not the collectives.

- `dtensor_op_us`: host time of an in-place add on a 16-element DTensor, less the same op on a plain
  tensor (`aten_op_us` of host_overhead.py); the op's sharding is cached after the first call, as in
  a training loop.
- `dtensor_list_entry_us`: extra host time per tensor of a foreach op over DTensor lists (the
  optimizer's path): slope of Adam(foreach=True).step() time over 16 and 128 DTensor parameters,
  less the plain-tensor slope, divided by the 12 list entries Adam walks per parameter.
- `fsdp_unit_us`, `fsdp_unit_per_param_us`: extra host time per `fully_shard` unit of one
  forward+backward over the same stack without FSDP2 (less the extra GPU ops FSDP2 issues, at
  `aten_op_us` each), for two block kinds (Linear+ReLU: 2 parameters; a small transformer block:
  12); the line through them gives the fixed and per-parameter shares.
- `ddp_step_us`, `ddp_param_us`: the same for DistributedDataParallel (its reducer's autograd hooks
  and bucket bookkeeping), per forward+backward, fixed and per parameter.

On the H200 these one-rank, tiny-tensor figures fell short of what train_gpt.py spends on 2 and 4
GPUs (issue #8): a one-rank mesh takes FSDP2's `world_size == 1` paths, which skip the all-gather and
reduce-scatter, and neither mixed precision nor autocast runs. The shipped FSDP2 and DTensor figures
therefore come from benchmarks/gpu/fit_framework_overhead.py (an FSDP2 probe over every rank, and the
in-situ host time of train_gpt.py); the DDP figures still come from here.

Run on the GPU machine (torch only):  python -m maya.estimator.framework_overhead --out framework_overhead.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable

import torch

from maya.estimator.host_overhead import MODULE_DEPTH, TINY_FEATURES, _count_ops, _time_chain

ADAM_LIST_ENTRIES_PER_PARAMETER = 12
"""As host_cost.LIST_ENTRIES_PER_PARAMETER: list entries Adam(foreach=True).step() walks per parameter."""


def _one_rank_group() -> None:
    import torch.distributed as dist

    if not dist.is_initialized():
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29533")
        dist.init_process_group("nccl", rank=0, world_size=1)


def _adam_slope_us(make_param: Callable[[], torch.nn.Parameter], iterations: int, sync) -> float:
    step_us = {}
    for n_params in (16, 128):
        params = [make_param() for _ in range(n_params)]
        for p in params:
            p.grad = torch.ones_like(p)
        optimizer = torch.optim.Adam(params, lr=1e-3, foreach=True)
        steps = max(iterations // 20, 10)
        step_us[n_params] = _time_chain(optimizer.step, steps, sync) * 1e6 / steps
    return (step_us[128] - step_us[16]) / (128 - 16)


def measure_framework_overhead(device: str = "cuda", *, iterations: int = 2000) -> dict:
    """{"per_op_us": {dtensor_op_us, dtensor_list_entry_us, fsdp_unit_us, aten_op_us}, ...}."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor import Shard, distribute_tensor

    _one_rank_group()
    sync = torch.cuda.synchronize
    mesh = init_device_mesh("cuda", (1,))
    per_op_us: dict[str, float] = {}

    plain = torch.zeros(TINY_FEATURES, device=device)
    per_op_us["aten_op_us"] = _time_chain(lambda: plain.add_(1), iterations, sync) * 1e6 / iterations
    sharded = distribute_tensor(torch.zeros(TINY_FEATURES, device=device), mesh, [Shard(0)])
    dtensor_us = _time_chain(lambda: sharded.add_(1), iterations, sync) * 1e6 / iterations
    per_op_us["dtensor_op_us"] = dtensor_us - per_op_us["aten_op_us"]

    plain_slope = _adam_slope_us(lambda: torch.nn.Parameter(torch.randn(TINY_FEATURES, device=device)), iterations, sync)
    dtensor_slope = _adam_slope_us(
        lambda: torch.nn.Parameter(distribute_tensor(torch.randn(TINY_FEATURES, device=device), mesh, [Shard(0)])),
        iterations, sync,
    )
    per_op_us["dtensor_list_entry_us"] = (dtensor_slope - plain_slope) / ADAM_LIST_ENTRIES_PER_PARAMETER

    # Two block kinds (2 and 12 parameters per unit) give a line: fixed + per-parameter cost per unit.
    from maya.estimator.host_overhead import _AttentionBlock

    points = []
    for make, shape in (
        (lambda: torch.nn.Sequential(torch.nn.Linear(TINY_FEATURES, TINY_FEATURES), torch.nn.ReLU()), (4, TINY_FEATURES)),
        (_AttentionBlock, (1, 8, TINY_FEATURES)),
    ):
        torch.manual_seed(0)
        base = torch.nn.Sequential(*[make() for _ in range(MODULE_DEPTH)]).to(device)
        wrapped = torch.nn.Sequential(*[make() for _ in range(MODULE_DEPTH)]).to(device)
        params_per_unit = sum(1 for _ in wrapped[0].parameters())
        for block in wrapped:
            fully_shard(block, mesh=mesh)
        fully_shard(wrapped, mesh=mesh)
        inp = torch.randn(*shape, device=device)

        def step(model) -> Callable[[], None]:
            def run() -> None:
                model(inp).sum().backward()
            return run

        n = max(iterations // MODULE_DEPTH, 20)
        extra_s = _time_chain(step(wrapped), n, sync) - _time_chain(step(base), n, sync)
        extra_ops = max(_count_ops(step(wrapped)) - _count_ops(step(base)), 0)
        units = MODULE_DEPTH + 1
        points.append((params_per_unit, (extra_s * 1e6 / n - extra_ops * per_op_us["aten_op_us"]) / units))
    (pa, ca), (pb, cb) = points
    per_op_us["fsdp_unit_per_param_us"] = (cb - ca) / (pb - pa)
    per_op_us["fsdp_unit_us"] = ca - per_op_us["fsdp_unit_per_param_us"] * pa

    # DDP: the reducer's per-parameter hooks and bucket work, per forward+backward, over the plain stack.
    ddp_points = []
    for make, shape in (
        (lambda: torch.nn.Sequential(torch.nn.Linear(TINY_FEATURES, TINY_FEATURES), torch.nn.ReLU()), (4, TINY_FEATURES)),
        (_AttentionBlock, (1, 8, TINY_FEATURES)),
    ):
        torch.manual_seed(0)
        base = torch.nn.Sequential(*[make() for _ in range(MODULE_DEPTH)]).to(device)
        wrapped = torch.nn.parallel.DistributedDataParallel(
            torch.nn.Sequential(*[make() for _ in range(MODULE_DEPTH)]).to(device)
        )
        n_params = sum(1 for _ in wrapped.parameters())
        inp = torch.randn(*shape, device=device)

        def ddp_step(model) -> Callable[[], None]:
            def run() -> None:
                model(inp).sum().backward()
            return run

        n = max(iterations // MODULE_DEPTH, 20)
        extra_s = _time_chain(ddp_step(wrapped), n, sync) - _time_chain(ddp_step(base), n, sync)
        extra_ops = max(_count_ops(ddp_step(wrapped)) - _count_ops(ddp_step(base)), 0)
        ddp_points.append((n_params, extra_s * 1e6 / n - extra_ops * per_op_us["aten_op_us"]))
    (pa, ca), (pb, cb) = ddp_points
    per_op_us["ddp_param_us"] = (cb - ca) / (pb - pa)
    per_op_us["ddp_step_us"] = ca - per_op_us["ddp_param_us"] * pa
    return {
        "per_op_us": per_op_us,
        "fsdp_points": [{"params_per_unit": p, "unit_us": c} for p, c in points],
        "ddp_points": [{"params": p, "step_us": c} for p, c in ddp_points],
        "method": __doc__.split("\n\n")[1],
        "gpu_name": torch.cuda.get_device_name(0),
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--iterations", type=int, default=2000)
    args = p.parse_args()
    result = measure_framework_overhead(iterations=args.iterations)
    result["command"] = "python -m maya.estimator.framework_overhead " + " ".join(sys.argv[1:])
    print(json.dumps(result["per_op_us"], indent=2))
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
