"""NCCL collective timings through torch.distributed, nccl-tests style, on the GPUs of one host.

Every rank runs each op at each size (float32 buffers; `size` is nccl-tests' "size": the all_reduce
buffer, the all_gather output, the reduce_scatter input, the all_to_all buffer, the message of
send/recv), `--warmup` times unmeasured and `--iters` times between two CUDA events, after a barrier.
Rank 0 writes the per-call time in microseconds and the bus bandwidth (nccl-tests PERFORMANCE.md) to
--out. NVLink multicast stays off (NCCL_NVLS_ENABLE=0). Only torch is imported.

    NCCL_NVLS_ENABLE=0 torchrun --nproc-per-node 2 benchmarks/gpu/nccl_bench.py --out nccl_h200x2.json
"""

import argparse
import json
import os
import platform
import time

import torch
import torch.distributed as dist

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "send_recv")
BUS_FACTOR = {  # busbw = algbw * factor (nccl-tests PERFORMANCE.md)
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "send_recv": lambda n: 1.0,
}


def call(op, buf, out, rank, world):
    if op == "all_reduce":
        dist.all_reduce(buf)
    elif op == "all_gather":
        dist.all_gather_into_tensor(out, buf)
    elif op == "reduce_scatter":
        dist.reduce_scatter_tensor(out, buf)
    elif op == "broadcast":
        dist.broadcast(buf, src=0)
    elif op == "all_to_all":
        dist.all_to_all_single(out, buf)
    elif op == "send_recv":  # ranks pair up: 0 -> 1, 2 -> 3, ...
        ops = [dist.P2POp(dist.isend if rank % 2 == 0 else dist.irecv, buf, rank + 1 if rank % 2 == 0 else rank - 1)]
        for work in dist.batch_isend_irecv(ops):
            work.wait()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--min-bytes", type=int, default=1 << 10)
    p.add_argument("--max-bytes", type=int, default=1 << 30)
    p.add_argument("--factor", type=int, default=4, help="size step")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    rank, world = dist.get_rank(), dist.get_world_size()
    rows = []
    size = args.min_bytes
    while size <= args.max_bytes:
        for op in OPS:
            if op == "send_recv" and world % 2:
                continue
            n = size // 4
            if op in ("all_gather",):
                buf, out = torch.ones(n // world, device="cuda"), torch.empty(n, device="cuda")
            elif op == "reduce_scatter":
                buf, out = torch.ones(n, device="cuda"), torch.empty(n // world, device="cuda")
            else:
                buf, out = torch.ones(n, device="cuda"), torch.empty(n, device="cuda")
            iters = args.iters if size < (256 << 20) else max(5, args.iters // 4)
            for _ in range(args.warmup):
                call(op, buf, out, rank, world)
            dist.barrier()
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(iters):
                call(op, buf, out, rank, world)
            end.record()
            torch.cuda.synchronize()
            time_us = start.elapsed_time(end) * 1000.0 / iters
            t = torch.tensor([time_us], device="cuda")
            dist.all_reduce(t, op=dist.ReduceOp.MAX)  # the slowest rank's time, as nccl-tests reports
            algbw = size / (t.item() * 1e-6) / 1e9
            rows.append({"op": op, "size_bytes": size, "ranks": world, "time_us": t.item(), "iters": iters,
                         "algbw_GBps": algbw, "busbw_GBps": algbw * BUS_FACTOR[op](world)})
            if rank == 0:
                print(f"{op:15s} {size:>12d} B {t.item():10.1f} us  busbw {rows[-1]['busbw_GBps']:8.1f} GB/s", flush=True)
        size *= args.factor
    if rank == 0:
        with open(args.out, "w") as f:
            json.dump({
                "gpu": torch.cuda.get_device_name(0), "gpus": world, "torch": torch.__version__,
                "cuda": torch.version.cuda, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                "host": platform.node(), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
                "env": {k: os.environ.get(k) for k in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS")},
                "command": f"torchrun --nproc-per-node {world} benchmarks/gpu/nccl_bench.py --out ...",
                "rows": rows,
            }, f, indent=2)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
