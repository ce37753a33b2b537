"""Hugging Face GPT2LMHeadModel training on one GPU, built from a GPT2Config (no weights downloaded).

GPT-2 small by default (12 layers, width 768, 12 heads, vocab 50257, dropout 0.1 as in the
config's defaults), attn_implementation="sdpa", causal-LM loss computed by the model from
labels = input_ids, AdamW with gradient clipping.

Launch (the defaults: 8 sequences of 1024 tokens, bf16 autocast):

    python benchmarks/validation/workloads/hf_gpt2.py --batch-size 8 --seq-len 1024 --precision bf16-autocast

The last line printed is `MAYA_RESULT {json}` with the CUDA-event time of every measured step (ms)
and the peak memory after warm-up (bytes).
"""

import argparse
import json
import statistics
from contextlib import nullcontext

import torch
from transformers import GPT2Config, GPT2LMHeadModel

device = "cuda"
LEARNING_RATE = 6e-4


def build_model(args, device):
    config = GPT2Config(
        vocab_size=50257, n_positions=max(1024, args.seq_len), n_embd=args.n_embd, n_layer=args.n_layer,
        n_head=args.n_head, use_cache=False, attn_implementation="sdpa",
    )
    model = GPT2LMHeadModel(config).to(device)
    if args.checkpoint:
        model.gradient_checkpointing_enable()
    if args.precision == "bf16":
        model = model.to(torch.bfloat16)
    return model


def get_batch(args, device):
    # Synthetic token ids, (B, T) int64; the model shifts labels by one position itself.
    input_ids = torch.randint(0, 50257, (args.batch_size, args.seq_len), device=device)
    return input_ids, input_ids


def compute_loss(model, batch):
    input_ids, labels = batch
    return model(input_ids=input_ids, labels=labels).loss


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-layer", type=int, default=12, help="transformer blocks")
    p.add_argument("--n-embd", type=int, default=768, help="width")
    p.add_argument("--n-head", type=int, default=12, help="attention heads")
    p.add_argument("--batch-size", type=int, default=8, help="sequences per step")
    p.add_argument("--seq-len", type=int, default=1024, help="tokens per sequence")
    p.add_argument("--precision", choices=["bf16-autocast", "bf16", "fp32"], default="bf16-autocast")
    p.add_argument("--checkpoint", action="store_true", help="activation checkpointing (gradient_checkpointing_enable)")
    p.add_argument("--steps", type=int, default=12, help="measured steps")
    p.add_argument("--warmup", type=int, default=4, help="unmeasured steps before them")
    p.add_argument("--log-interval", type=int, default=4, help="print the loss every this many steps")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    torch.manual_seed(0)
    model = build_model(args, device)
    model.train()
    print(f"number of parameters: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M")
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, weight_decay=0.01)
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
