"""Llama-style language-model training on one GPU, with synthetic tokens.

The model follows Meta's Llama reference (and torchtitan's llama): RMSNorm, rotary position
embeddings (RoPE), a SwiGLU MLP and grouped-query attention, where each key/value head serves
n_heads // n_kv_heads query heads (repeat_kv, then causal F.scaled_dot_product_attention).
Presets: 150m (Llama-2 tokenizer, 32000 tokens), 1b and 3b (the Llama 3.2 1B and 3B shapes,
128256 tokens, tied embeddings). The model is built directly on the GPU.

Launch (the defaults: 150m, 16 sequences of 1024 tokens, bf16 autocast):

    python benchmarks/validation/workloads/llama.py --model 150m --batch-size 16 --seq-len 1024 --precision bf16-autocast

The 3B model fits in bf16 weights with activation checkpointing:

    python benchmarks/validation/workloads/llama.py --model 3b --batch-size 4 --seq-len 2048 --precision bf16 --checkpoint

The last line printed is `MAYA_RESULT {json}` with the CUDA-event time of every measured step (ms)
and the peak memory after warm-up (bytes).
"""

import argparse
import json
import statistics
from contextlib import nullcontext
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

device = "cuda"


@dataclass
class ModelArgs:
    dim: int = 768
    n_layers: int = 12
    n_heads: int = 12
    n_kv_heads: int = 4
    ffn_hidden_dim: int = 2816
    vocab_size: int = 32000
    tie_embeddings: bool = False
    max_seq_len: int = 1024
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    checkpoint: bool = False  # recompute each block's activations in the backward pass


PRESETS = {
    "150m": dict(dim=768, n_layers=12, n_heads=12, n_kv_heads=4, ffn_hidden_dim=2816,
                 vocab_size=32000, tie_embeddings=False),
    "1b": dict(dim=2048, n_layers=16, n_heads=32, n_kv_heads=8, ffn_hidden_dim=8192,
               vocab_size=128256, tie_embeddings=True, rope_theta=500000.0),
    "3b": dict(dim=3072, n_layers=28, n_heads=24, n_kv_heads=8, ffn_hidden_dim=8192,
               vocab_size=128256, tie_embeddings=True, rope_theta=500000.0),
}


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        # Normalise in fp32, as the Llama reference does, then return x's dtype.
        xf = x.float()
        out = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return out.type_as(x) * self.weight


def rope_cos_sin(head_dim, max_seq_len, theta):
    """cos and sin tables for RoPE (Su et al. 2021), each (max_seq_len, head_dim)."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2).float() / head_dim))  # (head_dim/2,)
    t = torch.arange(max_seq_len).float()
    freqs = torch.outer(t, inv_freq)  # (T, head_dim/2)
    emb = torch.cat([freqs, freqs], dim=-1)  # (T, head_dim)
    return emb.cos(), emb.sin()


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def apply_rope(x, cos, sin):
    # x: (B, n_heads, T, head_dim); cos, sin: (T, head_dim)
    return (x * cos + rotate_half(x) * sin).type_as(x)


def repeat_kv(x, n_rep):
    """(B, n_kv_heads, T, head_dim) -> (B, n_kv_heads * n_rep, T, head_dim)."""
    if n_rep == 1:
        return x
    B, n_kv_heads, T, head_dim = x.shape
    return x[:, :, None].expand(B, n_kv_heads, n_rep, T, head_dim).reshape(B, n_kv_heads * n_rep, T, head_dim)


class Attention(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.n_heads = args.n_heads
        self.n_kv_heads = args.n_kv_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, args.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, args.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        n_rep = self.n_heads // self.n_kv_heads
        k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, n_heads, T, head_dim)
        return self.wo(y.transpose(1, 2).reshape(B, T, -1))


class FeedForward(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        # SwiGLU (Shazeer 2020): w2(silu(w1 x) * w3 x)
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.attention_norm = RMSNorm(args.dim, args.norm_eps)
        self.attention = Attention(args)
        self.ffn_norm = RMSNorm(args.dim, args.norm_eps)
        self.feed_forward = FeedForward(args.dim, args.ffn_hidden_dim)

    def forward(self, x, cos, sin):
        h = x + self.attention(self.attention_norm(x), cos, sin)
        return h + self.feed_forward(self.ffn_norm(h))


class Transformer(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.args = args
        self.tok_embeddings = nn.Embedding(args.vocab_size, args.dim)
        self.layers = nn.ModuleList([TransformerBlock(args) for _ in range(args.n_layers)])
        self.norm = RMSNorm(args.dim, args.norm_eps)
        self.output = nn.Linear(args.dim, args.vocab_size, bias=False)
        if args.tie_embeddings:
            self.output.weight = self.tok_embeddings.weight
        cos, sin = rope_cos_sin(args.dim // args.n_heads, args.max_seq_len, args.rope_theta)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)

    def forward(self, tokens):
        T = tokens.shape[1]
        h = self.tok_embeddings(tokens)  # (B, T, dim)
        cos, sin = self.rope_cos[:T].to(h.dtype), self.rope_sin[:T].to(h.dtype)
        for layer in self.layers:
            if self.args.checkpoint and self.training:
                h = checkpoint(layer, h, cos, sin, use_reentrant=False)
            else:
                h = layer(h, cos, sin)
        return self.output(self.norm(h))  # (B, T, vocab_size)


def build_model(args, device):
    preset = dict(PRESETS[args.model])
    for key, value in (("n_layers", args.n_layers), ("dim", args.dim), ("n_heads", args.n_heads),
                       ("n_kv_heads", args.n_kv_heads), ("ffn_hidden_dim", args.ffn_hidden_dim)):
        if value is not None:
            preset[key] = value
    model_args = ModelArgs(**preset, max_seq_len=args.seq_len, checkpoint=args.checkpoint)
    # Build on the GPU: a 3B model initialised on the CPU first takes tens of seconds.
    with torch.device(device):
        model = Transformer(model_args)
    if args.precision == "bf16":
        model = model.to(torch.bfloat16)
    return model


def get_batch(args, device):
    # Synthetic tokens stand in for a tokenized corpus: inputs and labels are (B, T) int64.
    vocab_size = PRESETS[args.model]["vocab_size"]
    tokens = torch.randint(0, vocab_size, (args.batch_size, args.seq_len + 1), device=device)
    return tokens[:, :-1], tokens[:, 1:]


def compute_loss(model, batch):
    inputs, labels = batch
    logits = model(inputs)
    return F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(0, 1))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=sorted(PRESETS), default="150m")
    p.add_argument("--n-layers", type=int, default=None, help="override the preset's layer count")
    p.add_argument("--dim", type=int, default=None, help="override the preset's width")
    p.add_argument("--n-heads", type=int, default=None, help="override the preset's query heads")
    p.add_argument("--n-kv-heads", type=int, default=None, help="override the preset's key/value heads")
    p.add_argument("--ffn-hidden-dim", type=int, default=None, help="override the preset's MLP width")
    p.add_argument("--batch-size", type=int, default=16, help="sequences per step")
    p.add_argument("--seq-len", type=int, default=1024, help="tokens per sequence")
    p.add_argument("--precision", choices=["bf16-autocast", "bf16", "fp32"], default="bf16-autocast")
    p.add_argument("--checkpoint", action="store_true", help="activation checkpointing per block")
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
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
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
