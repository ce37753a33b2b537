"""A nanoGPT-style GPT training script for one GPU or a torchrun job (GPT-2 small by default).

One GPU, for real:                 python examples/train_gpt.py --steps 10
8 GPUs, for real:                  torchrun --nproc-per-node 8 examples/train_gpt.py --tp 2 --pp 2 --dp fsdp
On Maya's emulated H200:           maya emulate --json summary.json examples/train_gpt.py --steps 3
On an emulated 16-node cluster:    maya emulate --nnodes 16 --nproc-per-node 8 examples/train_gpt.py --tp 4 --pp 2

Model flags: --seq, --dim, --layers, --heads, --vocab. Training flags: --batch (the micro-batch per
rank; --micro-batch is the same flag), --accum (micro-batches per step: gradient accumulation, or the
pipeline's micro-batches; default 1, or --pp when pipelined), --precision {bf16,fp16,fp32}, --checkpoint {none,reentrant,nonreentrant},
--optimizer {adamw,sgd}, --compile (torch.compile; Maya predicts it as eager PyTorch), --steps, --init-device {cuda,meta} (meta: allocate only this rank's shard of
the parameters instead of building every stage in fp32 on the GPU first). Parallelism (the world size comes from torchrun):
--tp (tensor parallel, Megatron column/row-wise plans on DTensor), --pp (pipeline stages, split by
layers) with --pp-schedule {gpipe,1f1b,interleaved} (interleaved gives each rank 2 stages), and
--dp {auto,ddp,fsdp} for the remaining data-parallel degree world_size / (tp * pp) (auto, the
default: DDP, or FSDP2 when --tp > 1, as DDP cannot hold tensor-parallel parameters).
Global batch = batch * accum * dp sequences of --seq tokens.
"""

import argparse
import math
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


def parse_args(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--batch", "--micro-batch", dest="batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--dim", type=int, default=768)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--vocab", type=int, default=50304)
    p.add_argument("--precision", choices=["bf16", "fp16", "fp32"], default="bf16")
    p.add_argument("--checkpoint", choices=["none", "reentrant", "nonreentrant"], default="none")
    p.add_argument("--accum", type=int, default=None,
                   help="micro-batches per step (default: 1, or --pp with pipeline stages, the fewest their "
                        "schedules accept)")
    p.add_argument("--optimizer", choices=["adamw", "sgd"], default="adamw")
    p.add_argument("--compile", action="store_true",
                   help="torch.compile the model (without --pp); under Maya it runs, and is predicted, eagerly")
    p.add_argument("--dp", choices=["auto", "ddp", "fsdp"], default="auto",
                   help="data parallelism over the remaining ranks; auto: DDP, or FSDP2 with --tp > 1 "
                        "(DDP cannot hold tensor-parallel parameters)")
    p.add_argument("--tp", type=int, default=1)
    p.add_argument("--pp", type=int, default=1)
    p.add_argument("--pp-schedule", choices=["gpipe", "1f1b", "interleaved"], default="1f1b")
    p.add_argument("--init-device", choices=["cuda", "meta"], default="cuda",
                   help="cuda: build each stage in fp32 on the GPU, then shard it; meta: build it on the meta "
                        "device, shard it, then allocate and initialise only this rank's shard (torchtitan's order)")
    args = p.parse_args(argv)
    if args.compile and args.pp > 1:
        p.error("--compile is for the whole model: not with --pp")
    if args.accum is None:
        args.accum = args.pp
    if args.dp == "auto":
        args.dp = "fsdp" if args.tp > 1 else "ddp"
    return args


class Block(nn.Module):
    def __init__(self, d, heads, checkpointing="none"):
        super().__init__()
        self.heads = heads
        self.checkpointing = checkpointing
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)

    def attend(self, x):
        B, T, _ = x.shape  # batch, sequence, channels
        qkv = self.qkv(self.ln1(x))  # (B, T, 3C/tp): with tensor parallelism each rank holds heads/tp heads
        q, k, v = qkv.chunk(3, dim=2)
        heads = self.heads * q.shape[-1] // x.shape[-1]
        q, k, v = (t.view(B, T, heads, -1).transpose(1, 2) for t in (q, k, v))  # (B, heads, T, C/heads)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, -1)
        return self.proj(y)

    def layer(self, x):
        x = x + self.attend(x)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))

    def forward(self, x):
        if self.checkpointing == "none":
            return self.layer(x)
        return checkpoint(self.layer, x, use_reentrant=self.checkpointing == "reentrant")


class GPT(nn.Module):
    """The whole model, or one pipeline stage of it (`first`/`last` say which ends it holds)."""

    def __init__(self, args, layers=None, first=True, last=True):
        super().__init__()
        layers = args.layers if layers is None else layers
        self.wte = nn.Embedding(args.vocab, args.dim) if first else None
        self.wpe = nn.Embedding(args.seq, args.dim) if first else None
        self.blocks = nn.ModuleList(Block(args.dim, args.heads, args.checkpoint) for _ in range(layers))
        self.ln_f = nn.LayerNorm(args.dim) if last else None
        self.lm_head = nn.Linear(args.dim, args.vocab, bias=False) if last else None
        if first and last:
            self.lm_head.weight = self.wte.weight  # weight tying (only when one stage holds both ends)

    def forward(self, x):
        if self.wte is not None:  # x: token ids (B, T)
            x = self.wte(x) + self.wpe(torch.arange(x.shape[1], device=x.device))
        for block in self.blocks:
            x = block(x)
        if self.lm_head is not None:
            x = self.lm_head(self.ln_f(x))  # (B, T, vocab)
        return x


def loss_fn(logits, targets):
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def tensor_parallel(model, tp_mesh):
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    for block in model.blocks:
        parallelize_module(block, tp_mesh, {
            "qkv": ColwiseParallel(), "proj": RowwiseParallel(), "fc": ColwiseParallel(), "out": RowwiseParallel(),
        })


def data_parallel(model, args, dp_mesh):
    if args.dp == "fsdp":
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.precision]
        mp = MixedPrecisionPolicy(param_dtype=dtype, reduce_dtype=torch.float32)
        for block in model.blocks:
            fully_shard(block, mesh=dp_mesh, mp_policy=mp)
        return fully_shard(model, mesh=dp_mesh, mp_policy=mp)
    if dp_mesh.size() == 1:
        return model
    if args.tp > 1:
        raise ValueError("DDP cannot hold tensor-parallel (DTensor) parameters: use --dp fsdp with --tp > 1")
    return nn.parallel.DistributedDataParallel(model, process_group=dp_mesh.get_group())


def clip_grad_norm(params, max_norm):
    """Clip per device mesh: tensor-parallel and data-parallel-only parameters live on different meshes."""
    groups = {}
    for p in params:
        groups.setdefault(getattr(p, "device_mesh", None), []).append(p)
    for group in groups.values():
        torch.nn.utils.clip_grad_norm_(group, max_norm)


def materialize(model, device, fsdp):
    """Allocate a model built on the meta device (after sharding: only this rank's shards) and initialise it."""
    swap = torch.__future__.get_swap_module_params_on_conversion()
    # Swapping parameters in place keeps wte/lm_head tied; FSDP's own to_empty keeps its shared
    # parameters and refuses the swap.
    torch.__future__.set_swap_module_params_on_conversion(not fsdp)
    try:
        model.to_empty(device=device)
    finally:
        torch.__future__.set_swap_module_params_on_conversion(swap)
    # GPT-2's initialisation (weights N(0, 0.02), biases 0, LayerNorm 1 and 0), on each rank's own
    # shard: the replicated parameters get constants, so every rank holds the same values.
    def local(param):
        return param.to_local() if hasattr(param, "to_local") else param

    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.Linear, nn.Embedding, nn.LayerNorm)):
                local(module.weight).fill_(1.0) if isinstance(module, nn.LayerNorm) else local(module.weight).normal_(0.0, 0.02)
                if getattr(module, "bias", None) is not None:
                    local(module.bias).zero_()
    return model


def build(args, mesh, device, **stage):
    """The whole model or one stage (`GPT`'s keywords), tensor- and data-parallel over `mesh` (None: one GPU)."""
    if args.init_device == "cuda":
        model = GPT(args, **stage).to(device)
    else:
        with torch.device("meta"):
            model = GPT(args, **stage)
    if mesh is not None and args.tp > 1:
        tensor_parallel(model, mesh["tp"])
    if args.init_device == "meta" and (mesh is None or args.dp == "ddp"):
        materialize(model, device, fsdp=False)  # DDP broadcasts and buckets real parameters when it wraps the model
    if mesh is not None:
        model = data_parallel(model, args, mesh["dp"])
    if args.init_device == "meta" and mesh is not None and args.dp == "fsdp":
        materialize(model, device, fsdp=True)
    return model


def pipeline(args, mesh, device):
    """This rank's stages and the schedule that runs them (torch.distributed.pipelining)."""
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe, ScheduleInterleaved1F1B

    pp_rank, pp = mesh["pp"].get_local_rank(), args.pp
    per_rank = 2 if args.pp_schedule == "interleaved" else 1
    n_stages = pp * per_rank
    if args.layers % n_stages:
        raise ValueError(f"--layers {args.layers} must divide into {n_stages} pipeline stages")
    stage_ids = [pp_rank + i * pp for i in range(per_rank)]  # interleaved: rank r holds stages r and r + pp
    stages, modules = [], []
    for s in stage_ids:
        model = build(args, mesh, device, layers=args.layers // n_stages, first=s == 0, last=s == n_stages - 1)
        modules.append(model)
        # Stage inputs and outputs, given up front (no shape-inference round trip at the first step):
        # token ids into the first stage, the residual stream between stages, logits out of the last.
        # The residual stream is fp32 under autocast, but FSDP's mixed precision casts each wrapped
        # module's inputs (and so the embeddings and every block output) to its param dtype.
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.precision]
        hidden_dtype = dtype if args.dp == "fsdp" else torch.float32
        hidden = torch.empty(args.batch, args.seq, args.dim, dtype=hidden_dtype, device="meta", requires_grad=True)
        first_in = torch.empty(args.batch, args.seq, dtype=torch.long, device="meta")
        logits = torch.empty(args.batch, args.seq, args.vocab, dtype=dtype, device="meta")
        stages.append(PipelineStage(
            model, s, n_stages, device, group=mesh["pp"].get_group(),
            input_args=first_in if s == 0 else hidden, output_args=logits if s == n_stages - 1 else hidden,
        ))
    schedule_cls = {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B, "interleaved": ScheduleInterleaved1F1B}[args.pp_schedule]
    schedule = schedule_cls(stages if per_rank > 1 else stages[0], n_microbatches=args.accum, loss_fn=loss_fn)
    return modules, schedule, 0 in stage_ids, n_stages - 1 in stage_ids


def main():
    args = parse_args()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.precision]
    schedule = mesh = None
    if world > 1:
        from torch.distributed.device_mesh import init_device_mesh

        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
        dist.init_process_group("nccl")
        if world % (args.tp * args.pp):
            raise ValueError(f"world_size={world} is not divisible by tp={args.tp} * pp={args.pp}")
        dp = world // (args.tp * args.pp)
        mesh = init_device_mesh("cuda", (args.pp, dp, args.tp), mesh_dim_names=("pp", "dp", "tp"))
    device = torch.device("cuda", torch.cuda.current_device())
    if args.pp > 1:
        modules, schedule, is_first, is_last = pipeline(args, mesh, device)
        params = [p for m in modules for p in m.parameters()]
    else:
        model = build(args, mesh, device)
        params = list(model.parameters())
        if args.compile:
            model = torch.compile(model)
    if args.optimizer == "adamw":
        opt = torch.optim.AdamW(params, lr=3e-4, weight_decay=0.1)
    else:
        opt = torch.optim.SGD(params, lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda", enabled=args.precision == "fp16" and schedule is None)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for step in range(args.steps):
        start.record()
        if schedule is not None:  # the schedule splits the batch into --accum micro-batches
            idx = torch.randint(0, args.vocab, (args.batch * args.accum, args.seq), device=device)
            losses = []
            with torch.autocast("cuda", dtype=dtype, enabled=args.precision != "fp32"):
                if is_first:
                    schedule.step(idx, target=idx if is_last else None, losses=losses)
                else:
                    schedule.step(target=idx if is_last else None, losses=losses)
            loss = torch.stack(losses).mean() if losses else torch.zeros((), device=device)
        else:
            for micro in range(args.accum):
                idx = torch.randint(0, args.vocab, (args.batch, args.seq), device=device)
                with torch.autocast("cuda", dtype=dtype, enabled=args.precision != "fp32"):
                    loss = loss_fn(model(idx), idx) / args.accum
                scaler.scale(loss).backward()
            scaler.unscale_(opt)
        clip_grad_norm(params, 1.0)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        end.record()
        torch.cuda.synchronize()
        if int(os.environ.get("RANK", "0")) == 0:
            print(f"step {step} loss {loss.item():.4f} ppl {math.exp(loss.item()):.2f} {start.elapsed_time(end):.2f} ms "
                  f"peak {torch.cuda.max_memory_allocated() / 2**20:.1f} MiB")
    if world > 1:
        print(f"rank {dist.get_rank()} peak {torch.cuda.max_memory_allocated() / 2**20:.1f} MiB", flush=True)
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
