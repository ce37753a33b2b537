"""NCCL collective timings through torch.distributed, nccl-tests style, on the GPUs of one host.

Every rank runs each op at each size (float32 buffers; `size` is nccl-tests' "size": the all_reduce
buffer, the all_gather output, the reduce_scatter input, the all_to_all buffer, the message of
send/recv), `--warmup` times unmeasured and `--iters` times between two CUDA events, after a barrier.
Rank 0 writes the per-call time in microseconds (loop wall time, host launch overhead included), the
NCCL kernel time per call from the CUDA profiler (it includes waiting for the peer), with --graph the
time per call replayed from a CUDA graph (no host in the loop), and the bus bandwidth from the graph
time, else the loop time (nccl-tests PERFORMANCE.md), to --out. NVLink multicast stays off (NCCL_NVLS_ENABLE=0). Only torch is imported.

    NCCL_NVLS_ENABLE=0 torchrun --nproc-per-node 2 benchmarks/gpu/nccl_bench.py --out nccl_h200x2.json
"""

import argparse
import json
import os
import platform
import sys
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


def kernel_time_us(op, buf, out, rank, world, iters):
    """Mean GPU time of the op's NCCL kernel(s) per call, from the CUDA profiler.

    The event-timed loop above also contains the host's launch overhead between calls, which bounds
    small messages (about 40 us per call through torch.distributed); the kernel time does not.
    """
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            call(op, buf, out, rank, world)
        torch.cuda.synchronize()
    total = 0.0
    for item in prof.key_averages():
        if item.key.startswith(("ncclDevKernel", "ncclKernel")):
            total += getattr(item, "device_time_total", 0.0) or getattr(item, "cuda_time_total", 0.0)
    return total / iters


def graph_time_us(op, buf, out, rank, world, iters):
    """Mean GPU time per call with no host in the loop: `iters` calls captured in one CUDA graph and
    replayed (nccl-tests' -G mode); None if this op cannot be captured here."""
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                call(op, buf, out, rank, world)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(iters):
                call(op, buf, out, rank, world)
        graph.replay()
        torch.cuda.synchronize()
        dist.barrier()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(3):
            graph.replay()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) * 1000.0 / (3 * iters)
    except Exception as e:  # recorded as missing, the event-timed figure still stands
        print(f"rank {rank}: {op} could not be captured in a CUDA graph: {e}", flush=True)
        return float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--min-bytes", type=int, default=1 << 10)
    p.add_argument("--max-bytes", type=int, default=1 << 30)
    p.add_argument("--factor", type=int, default=4, help="size step")
    p.add_argument("--sizes", default=None,
                   help="comma-separated message sizes in bytes, instead of --min-bytes/--max-bytes/--factor")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--graph", action="store_true", help="also time each op replayed from a CUDA graph")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    rank, world = dist.get_rank(), dist.get_world_size()
    rows = []
    sizes = [int(x) for x in args.sizes.split(",")] if args.sizes else []
    if not sizes:
        size = args.min_bytes
        while size <= args.max_bytes:
            sizes.append(size)
            size *= args.factor
    for size in sizes:
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
            kernel_us = kernel_time_us(op, buf, out, rank, world, iters)
            graph_us = graph_time_us(op, buf, out, rank, world, iters) if args.graph else float("nan")
            t = torch.tensor([time_us, kernel_us, graph_us], device="cuda")
            dist.all_reduce(t, op=dist.ReduceOp.MAX)  # the slowest rank's time, as nccl-tests reports
            best = t[2].item() if t[2].item() == t[2].item() else t[0].item()  # graph time when captured
            algbw = size / (best * 1e-6) / 1e9
            rows.append({"op": op, "size_bytes": size, "ranks": world, "time_us": t[0].item(),
                         "kernel_us": t[1].item(), "graph_us": t[2].item() if t[2].item() == t[2].item() else None,
                         "iters": iters,
                         "algbw_GBps": algbw, "busbw_GBps": algbw * BUS_FACTOR[op](world)})
            if rank == 0:
                print(f"{op:15s} {size:>12d} B {t[0].item():10.1f} us per call, graph {t[2].item():9.1f} us, "
                      f"busbw {rows[-1]['busbw_GBps']:8.1f} GB/s", flush=True)
    if rank == 0:
        with open(args.out, "w") as f:
            json.dump({
                "gpu": torch.cuda.get_device_name(0), "gpus": world, "torch": torch.__version__,
                "cuda": torch.version.cuda, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                "host": platform.node(), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
                "env": {k: os.environ.get(k) for k in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS",
                                                       "NCCL_PROTO", "NCCL_ALGO")},
                "command": f"torchrun --nproc-per-node {world} benchmarks/gpu/nccl_bench.py " + " ".join(sys.argv[1:]),
                "rows": rows,
            }, f, indent=2)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
