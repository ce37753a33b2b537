"""A nanoGPT-style GPT training script, written for one CUDA GPU (GPT-2 small by default).

Runs for real on a GPU:            python examples/train_gpt.py --steps 10
Runs on Maya's emulated H200:      maya emulate --json summary.json examples/train_gpt.py --steps 3
Flags: --batch, --seq, --dim, --layers, --heads, --vocab, --precision {bf16,fp16,fp32},
--checkpoint {none,reentrant,nonreentrant}, --accum (gradient accumulation), --optimizer {adamw,sgd}.
"""

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint



def parse_args(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--dim", type=int, default=768)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--vocab", type=int, default=50304)
    p.add_argument("--precision", choices=["bf16", "fp16", "fp32"], default="bf16")
    p.add_argument("--checkpoint", choices=["none", "reentrant", "nonreentrant"], default="none")
    p.add_argument("--accum", type=int, default=1)
    p.add_argument("--optimizer", choices=["adamw", "sgd"], default="adamw")
    return p.parse_args(argv)


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, C = x.shape  # batch, sequence, channels
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))  # (B, heads, T, C/heads)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.checkpoint = args.checkpoint
        self.wte = nn.Embedding(args.vocab, args.dim)
        self.wpe = nn.Embedding(args.seq, args.dim)
        self.blocks = nn.ModuleList(Block(args.dim, args.heads) for _ in range(args.layers))
        self.ln_f = nn.LayerNorm(args.dim)
        self.lm_head = nn.Linear(args.dim, args.vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            if self.checkpoint == "none":
                x = block(x)
            else:
                x = checkpoint(block, x, use_reentrant=self.checkpoint == "reentrant")
        logits = self.lm_head(self.ln_f(x))  # (B, T, vocab)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def main():
    args = parse_args()
    model = GPT(args).cuda()
    if args.optimizer == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.precision]
    scaler = torch.amp.GradScaler("cuda", enabled=args.precision == "fp16")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for step in range(args.steps):
        start.record()
        for micro in range(args.accum):
            idx = torch.randint(0, args.vocab, (args.batch, args.seq), device="cuda")
            with torch.autocast("cuda", dtype=dtype, enabled=args.precision != "fp32"):
                loss = model(idx, idx) / args.accum
            scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        end.record()
        torch.cuda.synchronize()
        print(f"step {step} loss {loss.item():.4f} ppl {math.exp(loss.item()):.2f} {start.elapsed_time(end):.2f} ms "
              f"peak {torch.cuda.max_memory_allocated() / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
