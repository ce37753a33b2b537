"""GPT-2 training wrapped in DDP or FSDP2, the multi-GPU code path, on however many GPUs torchrun gives.

The model, batch and optimizer are gpt2.py's (nanoGPT style). Without torchrun the script forms a
one-rank NCCL group itself, so the data-parallel machinery (DDP's gradient buckets and all-reduces,
FSDP2's all-gathers, reduce-scatters and parameter freeing) runs and is measured on a single GPU.

Launch:

    python benchmarks/validation/workloads/gpt2_data_parallel.py --dp fsdp --model 124m --batch-size 8
    torchrun --nproc-per-node 8 benchmarks/validation/workloads/gpt2_data_parallel.py --dp ddp

The last line printed (by rank 0) is `MAYA_RESULT {json}` with rank 0's CUDA-event step times (ms)
and peak memory after warm-up (bytes).
"""

import json
import os
import statistics
import sys
from contextlib import nullcontext

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2  # noqa: E402  (the same model and batch as the single-GPU workload)

build_model, get_batch, compute_loss = gpt2.build_model, gpt2.get_batch, gpt2.compute_loss
device = "cuda"


def parse_args(argv=None):
    """gpt2.py's flags plus --dp {ddp,fsdp}."""
    argv = list(sys.argv[1:] if argv is None else argv)
    dp = "ddp"
    if "--dp" in argv:
        i = argv.index("--dp")
        dp = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    if dp not in ("ddp", "fsdp") or "--help" in argv or "-h" in argv:
        print("usage: gpt2_data_parallel.py [--dp {ddp,fsdp}] [gpt2.py flags]", file=sys.stderr if dp not in ("ddp", "fsdp") else sys.stdout)
        if dp not in ("ddp", "fsdp"):
            raise SystemExit(f"--dp must be ddp or fsdp, not {dp!r}")
    args = gpt2.parse_args(argv)
    args.dp = dp
    return args


def main():
    args = parse_args()
    dp = args.dp
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = gpt2.build_model(args, device)
    if dp == "fsdp":
        from torch.distributed.fsdp import fully_shard

        for block in model.transformer.h:
            fully_shard(block)
        fully_shard(model)
    else:
        model = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)
    ctx = torch.autocast(device, dtype=torch.bfloat16) if args.precision == "bf16-autocast" else nullcontext()
    events = []
    for step in range(args.warmup + args.steps):
        if step == args.warmup:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        x, y = gpt2.get_batch(args, device)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        with ctx:
            _, loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        end.record()
        if step >= args.warmup:
            events.append((start, end))
    torch.cuda.synchronize()
    step_ms = [s.elapsed_time(e) for s, e in events]
    if rank == 0:
        print("MAYA_RESULT " + json.dumps({
            "step_ms": step_ms, "median_step_ms": statistics.median(step_ms),
            "max_memory_allocated": torch.cuda.max_memory_allocated(),
            "max_memory_reserved": torch.cuda.max_memory_reserved(),
        }))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
