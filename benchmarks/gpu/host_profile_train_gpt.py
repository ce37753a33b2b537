"""Where a step of examples/train_gpt.py spends its host (CPU) time on real GPUs, per phase, with a profile.

After `--warmup` steps, `--steps` steps are timed. For each one, rank 0 records the wall time
(time.perf_counter) that the Python thread takes to issue each phase: forward+loss, backward, gradient
clipping, optimizer step and zero_grad. These are taken before the closing torch.cuda.synchronize(),
so they measure issuing only. It also records the whole step's wall time and the CUDA-event step time
that train_gpt.py prints. When the issue time is close to the step time, the step is host-bound: the
GPU waits for launches. Then `--profile-steps` steps run under torch.profiler (CPU and CUDA activity).
Rank 0 saves the Chrome trace, gzipped, and a summary of the CPU time in each FSDP2 record_function
range (FSDP::pre_forward and the others, summed over units) and in the busiest aten ops. Only torch
and train_gpt.py are imported: the GPU machine has no Ray or CatBoost.

    NCCL_NVLS_ENABLE=0 torchrun --nproc-per-node 2 benchmarks/gpu/host_profile_train_gpt.py --out-dir out/fsdp_2 --dp fsdp
"""

import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import train_gpt  # noqa: E402

MODEL = ["--seq", "1024", "--dim", "768", "--layers", "12", "--heads", "12", "--vocab", "50304", "--batch", "8",
         "--precision", "bf16"]
"""GPT-2 small at 8 x 1,024 tokens per rank in bf16: benchmarks/gpu/measure_train_gpt.py's distributed study."""

PHASES = ("forward", "backward", "clip", "optimizer", "zero_grad")


def setup(targs):
    """Process group, mesh, model and optimizer exactly as train_gpt.main() builds them (no pipeline)."""
    from torch.distributed.device_mesh import init_device_mesh

    world = int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl")
    mesh = init_device_mesh("cuda", (1, world // targs.tp, targs.tp), mesh_dim_names=("pp", "dp", "tp"))
    device = torch.device("cuda", torch.cuda.current_device())
    model = train_gpt.build(targs, mesh, device)
    params = list(model.parameters())
    return model, params, torch.optim.AdamW(params, lr=3e-4, weight_decay=0.1), device


def timed_step(model, params, opt, targs, device) -> dict:
    """One training step as train_gpt.py runs it (bf16: no grad scaler), with host timestamps per phase."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    marks = [time.perf_counter()]
    start.record()
    idx = torch.randint(0, targs.vocab, (targs.batch, targs.seq), device=device)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = train_gpt.loss_fn(model(idx), idx)
    marks.append(time.perf_counter())
    loss.backward()
    marks.append(time.perf_counter())
    train_gpt.clip_grad_norm(params, 1.0)
    marks.append(time.perf_counter())
    opt.step()
    marks.append(time.perf_counter())
    opt.zero_grad(set_to_none=True)
    marks.append(time.perf_counter())
    end.record()
    torch.cuda.synchronize()
    wall_ms = (time.perf_counter() - marks[0]) * 1e3
    host_ms = {p: (b - a) * 1e3 for p, a, b in zip(PHASES, marks, marks[1:])}
    return {"host_ms": host_ms, "issue_ms": (marks[-1] - marks[0]) * 1e3, "wall_ms": wall_ms,
            "cuda_event_ms": start.elapsed_time(end)}


def profile_summary(prof) -> dict:
    """CPU time (us, children included) per FSDP2 range name with the unit's name stripped, and the
    aten ops with the most self CPU time, over the profiled steps."""
    fsdp: dict[str, dict] = {}
    aten = []
    for e in prof.key_averages():
        if e.key.startswith("FSDP::"):
            name = re.sub(r" \(.*\)$", "", e.key)
            row = fsdp.setdefault(name, {"count": 0, "cpu_time_total_us": 0.0})
            row["count"] += e.count
            row["cpu_time_total_us"] += e.cpu_time_total
        elif e.key.startswith("aten::") or e.key.startswith("c10d::") or e.key.startswith("nccl:"):
            aten.append({"op": e.key, "count": e.count, "self_cpu_us": e.self_cpu_time_total,
                         "cpu_total_us": e.cpu_time_total})
    aten.sort(key=lambda r: -r["self_cpu_us"])
    return {"fsdp_ranges": fsdp, "top_ops_by_self_cpu": aten[:40]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out-dir", required=True, type=Path)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--profile-steps", type=int, default=2)
    args, rest = p.parse_known_args()
    targs = train_gpt.parse_args([*MODEL, *rest])
    model, params, opt, device = setup(targs)
    for _ in range(args.warmup):
        timed_step(model, params, opt, targs, device)
    steps = [timed_step(model, params, opt, targs, device) for _ in range(args.steps)]
    prof = None
    if args.profile_steps:
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(args.profile_steps):
                timed_step(model, params, opt, targs, device)
            torch.cuda.synchronize()
    if dist.get_rank() == 0:
        args.out_dir.mkdir(parents=True, exist_ok=True)
        if prof is not None:
            prof.export_chrome_trace(str(args.out_dir / "trace_rank0.json.gz"))
        median = {k: statistics.median(s[k] for s in steps) for k in ("issue_ms", "wall_ms", "cuda_event_ms")}
        median["host_ms"] = {ph: statistics.median(s["host_ms"][ph] for s in steps) for ph in PHASES}
        result = {
            "command": "torchrun --nproc-per-node {} benchmarks/gpu/host_profile_train_gpt.py {}".format(
                os.environ["WORLD_SIZE"], " ".join(sys.argv[1:])),
            "train_gpt_argv": [*MODEL, *rest], "world_size": dist.get_world_size(),
            "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "median": median, "steps": steps,
            "profile": profile_summary(prof) if prof is not None else None,
        }
        (args.out_dir / "host_profile.json").write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps({"world_size": result["world_size"], "argv": rest, "median": median}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
