"""Causal language-model training on one GPU with PyTorch's built-in nn.TransformerEncoder.

The model is what the PyTorch tutorials build: nn.Embedding, sinusoidal position encodings
(Vaswani et al. 2017, section 3.5), --n-layers of nn.TransformerEncoderLayer (batch_first,
pre-LayerNorm, GELU; its nn.MultiheadAttention dispatches to scaled_dot_product_attention) under
a causal mask from nn.Transformer.generate_square_subsequent_mask, and a linear decoder.

Launch (the defaults: 8 layers of width 512, 32 sequences of 512 tokens, bf16 autocast):

    python benchmarks/validation/workloads/torch_transformer.py --batch-size 32 --seq-len 512 --precision bf16-autocast

The last line printed is `MAYA_RESULT {json}` with the CUDA-event time of every measured step (ms)
and the peak memory after warm-up (bytes).
"""

import argparse
import json
import math
import statistics
from contextlib import nullcontext

import torch
import torch.nn as nn
import torch.nn.functional as F

device = "cuda"
VOCAB_SIZE = 32000
CLIP_NORM = 0.5


class TransformerLM(nn.Module):
    def __init__(self, d_model, n_heads, n_layers, max_len, dropout=0.1):
        super().__init__()
        self.d_model = d_model
        self.embedding = nn.Embedding(VOCAB_SIZE, d_model)
        position = torch.arange(max_len).unsqueeze(1)  # (max_len, 1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))  # (d_model/2,)
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe, persistent=False)
        layer = nn.TransformerEncoderLayer(d_model, n_heads, dim_feedforward=4 * d_model, dropout=dropout,
                                           activation="gelu", batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.decoder = nn.Linear(d_model, VOCAB_SIZE)
        self.register_buffer("causal_mask", nn.Transformer.generate_square_subsequent_mask(max_len),
                             persistent=False)  # (max_len, max_len), -inf above the diagonal

    def forward(self, tokens):
        T = tokens.shape[1]
        x = self.embedding(tokens) * math.sqrt(self.d_model) + self.pe[:T]  # (B, T, d_model)
        x = self.encoder(x, mask=self.causal_mask[:T, :T], is_causal=True)
        return self.decoder(x)  # (B, T, vocab)


def build_model(args, device):
    return TransformerLM(args.d_model, args.n_heads, args.n_layers, args.seq_len).to(device)


def get_batch(args, device):
    tokens = torch.randint(0, VOCAB_SIZE, (args.batch_size, args.seq_len + 1), device=device)
    return tokens[:, :-1], tokens[:, 1:]


def compute_loss(model, batch):
    inputs, targets = batch
    return F.cross_entropy(model(inputs).flatten(0, 1), targets.flatten(0, 1))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-layers", type=int, default=8, help="encoder layers")
    p.add_argument("--d-model", type=int, default=512, help="width (the MLP is 4x wider)")
    p.add_argument("--n-heads", type=int, default=8, help="attention heads")
    p.add_argument("--batch-size", type=int, default=32, help="sequences per step")
    p.add_argument("--seq-len", type=int, default=512, help="tokens per sequence")
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
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4)
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
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP_NORM)
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
