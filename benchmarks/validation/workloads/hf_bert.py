"""Hugging Face BertForMaskedLM training on one GPU, built from a BertConfig (no weights downloaded).

BERT-base by default (12 layers, width 768, 12 heads, vocab 30522, dropout 0.1), attn_implementation
="sdpa". Masked-LM batches as in Devlin et al. 2019: 15% of the positions are replaced by [MASK]
(id 103) and only those are scored (every other label is -100). AdamW with gradient clipping.

Launch (the defaults: 32 sequences of 512 tokens, bf16 autocast):

    python benchmarks/validation/workloads/hf_bert.py --batch-size 32 --seq-len 512 --precision bf16-autocast

The last line printed is `MAYA_RESULT {json}` with the CUDA-event time of every measured step (ms)
and the peak memory after warm-up (bytes).
"""

import argparse
import json
import statistics
from contextlib import nullcontext

import torch
from transformers import BertConfig, BertForMaskedLM

device = "cuda"
LEARNING_RATE = 1e-4

MASK_TOKEN_ID = 103  # [MASK] in bert-base-uncased's vocabulary


def build_model(args, device):
    config = BertConfig(
        vocab_size=30522, hidden_size=args.hidden_size, num_hidden_layers=args.num_layers,
        num_attention_heads=args.num_heads, intermediate_size=4 * args.hidden_size,
        max_position_embeddings=max(512, args.seq_len), attn_implementation="sdpa",
    )
    model = BertForMaskedLM(config).to(device)
    if args.checkpoint:
        model.gradient_checkpointing_enable()
    if args.precision == "bf16":
        model = model.to(torch.bfloat16)
    return model


def get_batch(args, device):
    tokens = torch.randint(1000, 30522, (args.batch_size, args.seq_len), device=device)  # (B, T)
    masked = torch.rand(args.batch_size, args.seq_len, device=device) < 0.15  # (B, T) bool
    input_ids = torch.where(masked, MASK_TOKEN_ID, tokens)
    labels = torch.where(masked, tokens, -100)
    attention_mask = torch.ones_like(tokens)  # no padding in synthetic batches
    return input_ids, attention_mask, labels


def compute_loss(model, batch):
    input_ids, attention_mask, labels = batch
    return model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-layers", type=int, default=12, help="encoder layers")
    p.add_argument("--hidden-size", type=int, default=768, help="width (the MLP is 4x wider)")
    p.add_argument("--num-heads", type=int, default=12, help="attention heads")
    p.add_argument("--batch-size", type=int, default=32, help="sequences per step")
    p.add_argument("--seq-len", type=int, default=512, help="tokens per sequence")
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
