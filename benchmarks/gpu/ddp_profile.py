"""Profile a few DDP steps of examples/train_gpt.py on the local GPUs and save rank 0's kernel timeline.

Saves a Chrome trace (torch.profiler, CUDA activity) of `--profile-steps` steps after `--warmup`
steps, to study how NCCL all-reduces overlap and slow the backward's kernels
(benchmarks/overlap_report.py reads it). NVLink multicast stays off.

    NCCL_NVLS_ENABLE=0 torchrun --nproc-per-node 2 benchmarks/gpu/ddp_profile.py --out trace_rank0.json
"""

import argparse
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import train_gpt  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--profile-steps", type=int, default=2)
    args, rest = p.parse_known_args()
    targs = train_gpt.parse_args(["--seq", "1024", "--dim", "768", "--layers", "12", "--heads", "12", "--batch", "8", *rest])
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29541")
    dist.init_process_group("nccl", rank=int(os.environ.get("RANK", "0")), world_size=int(os.environ.get("WORLD_SIZE", "1")))
    model = torch.nn.parallel.DistributedDataParallel(train_gpt.GPT(targs).cuda())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)

    def step():
        idx = torch.randint(0, targs.vocab, (targs.batch, targs.seq), device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = train_gpt.loss_fn(model(idx), idx)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(args.profile_steps):
            step()
        torch.cuda.synchronize()
    if dist.get_rank() == 0:
        prof.export_chrome_trace(args.out)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
