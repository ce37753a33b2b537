"""Hugging Face T5ForConditionalGeneration training on one GPU, built from a T5Config (no weights downloaded).

T5-base shapes by default (Raffel et al. 2020: 12 encoder and 12 decoder layers, d_model 768,
12 heads, d_ff 3072, vocab 32128, relative position buckets), attn_implementation="sdpa". A step
maps 512 synthetic source tokens to 128 target tokens (the span-corruption lengths of the paper);
the model builds decoder inputs from the labels itself. AdamW with gradient clipping.

Launch (the defaults: 16 pairs, bf16 autocast):

    python benchmarks/validation/workloads/hf_t5.py --batch-size 16 --source-len 512 --target-len 128 --precision bf16-autocast

The last line printed is `MAYA_RESULT {json}` with the CUDA-event time of every measured step (ms)
and the peak memory after warm-up (bytes).
"""

import argparse
import json
import statistics
from contextlib import nullcontext

import torch
from transformers import T5Config, T5ForConditionalGeneration

device = "cuda"
VOCAB_SIZE = 32128
CLIP_NORM = 1.0


def build_model(args, device):
    config = T5Config(
        vocab_size=VOCAB_SIZE, d_model=args.d_model, d_kv=args.d_model // args.num_heads, d_ff=4 * args.d_model,
        num_layers=args.num_layers, num_decoder_layers=args.num_layers, num_heads=args.num_heads,
        pad_token_id=0, eos_token_id=1, decoder_start_token_id=0,  # T5's own ids
        use_cache=False, attn_implementation="sdpa",
    )
    model = T5ForConditionalGeneration(config).to(device)
    if args.checkpoint:
        model.gradient_checkpointing_enable()
    if args.precision == "bf16":
        model = model.to(torch.bfloat16)
    return model


def get_batch(args, device):
    input_ids = torch.randint(2, VOCAB_SIZE, (args.batch_size, args.source_len), device=device)  # (B, S)
    labels = torch.randint(2, VOCAB_SIZE, (args.batch_size, args.target_len), device=device)  # (B, T)
    return input_ids, labels


def compute_loss(model, batch):
    input_ids, labels = batch
    return model(input_ids=input_ids, labels=labels).loss


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-layers", type=int, default=12, help="encoder layers, and as many decoder layers")
    p.add_argument("--d-model", type=int, default=768, help="width (d_ff is 4x wider)")
    p.add_argument("--num-heads", type=int, default=12, help="attention heads")
    p.add_argument("--batch-size", type=int, default=16, help="source/target pairs per step")
    p.add_argument("--source-len", type=int, default=512, help="encoder tokens per pair")
    p.add_argument("--target-len", type=int, default=128, help="decoder tokens per pair")
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
    print(f"number of parameters: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
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
