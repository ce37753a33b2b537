"""Which algorithm, protocol and channels NCCL picks for each collective and size, and its tuning table.

Every rank calls each op once per size (float32, nccl-tests' "size" as in nccl_bench.py) with NCCL's
own logging on; rank 0 then reads its log back and writes, to --out, the lines NCCL prints for every
collective it enqueues ("<op>: <bytes> Bytes -> Algo <algo> proto <proto> channel{Lo..Hi}={lo..hi}",
src/enqueue.cc, scheduleCollTasksToPlan) and the latency/bandwidth table of its cost model
(src/graph/tuning.cc, ncclTopoTuneModel; printed under NCCL_DEBUG_SUBSYS=TUNING). send/recv go through
NCCL's p2p path, which prints neither. NVLink multicast stays off. Only torch is imported.

    NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 torchrun --nproc-per-node 2 \\
        benchmarks/gpu/nccl_algo_probe.py --out nccl_algo_h200x2.json
"""

import argparse
import json
import os
import re
import sys
import tempfile
import time

import torch
import torch.distributed as dist

from nccl_bench import call  # this folder is sys.path[0] when torchrun runs the script

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast")
DEFAULT_SIZES = [1 << k for k in range(10, 31, 2)] + [
    262144, 524288, 1572864, 2097152, 3145728, 6291456, 8388608, 12582912, 25165824, 33554432]
CHOICE = re.compile(r"(\w+): (\d+) Bytes -> Algo (\w+) proto (\w+) channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default=",".join(map(str, sorted(set(DEFAULT_SIZES)))), help="comma-separated sizes in bytes")
    p.add_argument("--out", required=True)
    p.add_argument("--log-dir", default=None, help="keep NCCL's per-rank logs here (default: a temporary folder)")
    args = p.parse_args()
    # NCCL reads its debug settings when it initializes, which is in init_process_group below.
    log_dir = args.log_dir or tempfile.mkdtemp(prefix="nccl_algo_probe_")
    os.makedirs(log_dir, exist_ok=True)
    log_path = os.path.join(log_dir, f"nccl_rank{os.environ['RANK']}.log")
    os.environ.update({"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,GRAPH,TUNING", "NCCL_DEBUG_FILE": log_path})
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    rank, world = dist.get_rank(), dist.get_world_size()
    sizes = [int(x) for x in args.sizes.split(",")]
    for size in sizes:
        for op in OPS:
            n = size // 4
            if op == "all_gather":
                buf, out = torch.ones(n // world, device="cuda"), torch.empty(n, device="cuda")
            elif op == "reduce_scatter":
                buf, out = torch.ones(n, device="cuda"), torch.empty(n // world, device="cuda")
            else:
                buf, out = torch.ones(n, device="cuda"), None
            call(op, buf, out, rank, world)
            torch.cuda.synchronize()
    dist.barrier()
    torch.cuda.synchronize()
    dist.destroy_process_group()
    if rank != 0:
        return
    log = open(log_path).read()
    choices = [{"op": m[1], "size_bytes": int(m[2]), "algorithm": m[3], "protocol": m[4],
                "channels": int(m[6]) - int(m[5]) + 1} for m in CHOICE.finditer(log)]
    table = [line.split("NCCL INFO ", 1)[1] for line in log.splitlines()
             if "NCCL INFO" in line and ("|" in line or "channels" in line.lower() or "Pattern" in line)]
    with open(args.out, "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(0), "gpus": world, "torch": torch.__version__,
                   "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                   "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
                   "env": {k: os.environ.get(k) for k in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
                                                          "NVSHMEM_DISABLE_NVLS", "NCCL_PROTO", "NCCL_ALGO")},
                   "command": f"torchrun --nproc-per-node {world} benchmarks/gpu/nccl_algo_probe.py " + " ".join(sys.argv[1:]),
                   "choices": choices, "tuning_log": table}, f, indent=1)
    print(f"{len(choices)} choices, {len(table)} tuning lines -> {args.out}")
    for c in choices:
        print(f"{c['op']:14s} {c['size_bytes']:>11d} B  {c['algorithm']:5s} {c['protocol']:6s} {c['channels']:3d} channels")


if __name__ == "__main__":
    main()
