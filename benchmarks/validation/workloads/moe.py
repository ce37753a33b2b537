"""Mixture-of-experts decoder-only language model training on one GPU, with synthetic tokens.

Each block is pre-RMSNorm causal attention (F.scaled_dot_product_attention) followed by a sparse
MoE layer in the style of Mixtral (Jiang et al. 2024) and its Hugging Face implementation: a linear
router scores --num-experts SwiGLU experts per token, the top --top-k are kept with renormalised
softmax weights, and a Python loop over experts gathers each expert's tokens with torch.where and
scatters the weighted outputs back with index_add_. Which tokens go where is data-dependent, so
the step synchronises with the host once per expert per layer. Load-balancing loss as in Switch
Transformer (Fedus et al. 2021, eq. 4), weight 0.01.

Launch (the defaults: 8 layers of width 768, 8 experts, top-2, 8 sequences of 1024 tokens, bf16 autocast):

    python benchmarks/validation/workloads/moe.py --batch-size 8 --seq-len 1024 --num-experts 8 --top-k 2

The last line printed is `MAYA_RESULT {json}` with the CUDA-event time of every measured step (ms)
and the peak memory after warm-up (bytes).
"""

import argparse
import json
import statistics
from contextlib import nullcontext

import torch
import torch.nn as nn
import torch.nn.functional as F

device = "cuda"
VOCAB_SIZE = 32000
AUX_LOSS_WEIGHT = 0.01


class Attention(nn.Module):
    def __init__(self, dim, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, C // self.n_heads).permute(2, 0, 3, 1, 4).unbind(0)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, n_heads, T, head_dim)
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class Expert(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class SparseMoE(nn.Module):
    def __init__(self, dim, hidden_dim, num_experts, top_k):
        super().__init__()
        self.num_experts, self.top_k = num_experts, top_k
        self.router = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(dim, hidden_dim) for _ in range(num_experts)])

    def forward(self, x):
        B, T, C = x.shape
        x = x.view(-1, C)  # (N, C), N = B * T tokens
        probs = F.softmax(self.router(x).float(), dim=-1)  # (N, num_experts)
        weights, selected = torch.topk(probs, self.top_k, dim=-1)  # (N, top_k)
        weights = (weights / weights.sum(dim=-1, keepdim=True)).to(x.dtype)
        out = torch.zeros_like(x)
        expert_mask = F.one_hot(selected, self.num_experts).permute(2, 1, 0)  # (num_experts, top_k, N)
        for e, expert in enumerate(self.experts):
            slot, token = torch.where(expert_mask[e])  # data-dependent sizes: a host sync
            y = expert(x[token]) * weights[token, slot, None]
            out.index_add_(0, token, y.to(out.dtype))
        # Switch Transformer balance loss: num_experts * sum_e (fraction routed to e) * (mean prob of e)
        fraction = expert_mask.sum(dim=(1, 2)).float() / (x.shape[0] * self.top_k)
        aux_loss = self.num_experts * (fraction * probs.mean(dim=0)).sum()
        return out.view(B, T, C), aux_loss


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Block(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.norm1 = RMSNorm(args.dim)
        self.attn = Attention(args.dim, args.n_heads)
        self.norm2 = RMSNorm(args.dim)
        self.moe = SparseMoE(args.dim, args.expert_hidden_dim, args.num_experts, args.top_k)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        y, aux_loss = self.moe(self.norm2(x))
        return x + y, aux_loss


class MoETransformer(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.tok_emb = nn.Embedding(VOCAB_SIZE, args.dim)
        self.pos_emb = nn.Embedding(args.seq_len, args.dim)
        self.blocks = nn.ModuleList([Block(args) for _ in range(args.n_layers)])
        self.norm = RMSNorm(args.dim)
        self.lm_head = nn.Linear(args.dim, VOCAB_SIZE, bias=False)

    def forward(self, tokens):
        T = tokens.shape[1]
        x = self.tok_emb(tokens) + self.pos_emb(torch.arange(T, device=tokens.device))  # (B, T, dim)
        aux_loss = 0.0
        for block in self.blocks:
            x, block_aux = block(x)
            aux_loss = aux_loss + block_aux
        return self.lm_head(self.norm(x)), aux_loss / len(self.blocks)  # (B, T, vocab), scalar


def build_model(args, device):
    return MoETransformer(args).to(device)


def get_batch(args, device):
    tokens = torch.randint(0, VOCAB_SIZE, (args.batch_size, args.seq_len + 1), device=device)
    return tokens[:, :-1], tokens[:, 1:]


def compute_loss(model, batch):
    inputs, targets = batch
    logits, aux_loss = model(inputs)
    return F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten(0, 1)) + AUX_LOSS_WEIGHT * aux_loss


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-layers", type=int, default=8, help="transformer blocks")
    p.add_argument("--dim", type=int, default=768, help="width")
    p.add_argument("--n-heads", type=int, default=12, help="attention heads")
    p.add_argument("--num-experts", type=int, default=8, help="experts per MoE layer")
    p.add_argument("--top-k", type=int, default=2, help="experts per token")
    p.add_argument("--expert-hidden-dim", type=int, default=2048, help="SwiGLU width of each expert")
    p.add_argument("--batch-size", type=int, default=8, help="sequences per step")
    p.add_argument("--seq-len", type=int, default=1024, help="tokens per sequence")
    p.add_argument("--precision", choices=["bf16-autocast", "fp32"], default="bf16-autocast")
    p.add_argument("--steps", type=int, default=12, help="measured steps")
    p.add_argument("--warmup", type=int, default=4, help="unmeasured steps before them")
    p.add_argument("--log-interval", type=int, default=4, help="print the loss every this many steps")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    torch.manual_seed(0)
    model = build_model(args, device)
    print(f"number of parameters: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M")
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)
    ctx = torch.autocast(device, dtype=torch.bfloat16) if args.precision == "bf16-autocast" else nullcontext()

    events = []  # (start, end) CUDA events of each measured step
    for step in range(args.warmup + args.steps):
        if step == args.warmup:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        batch = get_batch(args, device)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        with ctx:
            loss = compute_loss(model, batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        end.record()
        if step >= args.warmup:
            events.append((start, end))
        if step % args.log_interval == 0 or step == args.warmup + args.steps - 1:
            print(f"step {step}: loss {loss.item():.4f}")
    torch.cuda.synchronize()

    step_ms = [start.elapsed_time(end) for start, end in events]
    result = {
        "step_ms": step_ms,
        "median_step_ms": statistics.median(step_ms),
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "max_memory_reserved": torch.cuda.max_memory_reserved(),
    }
    print("MAYA_RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
