"""Hugging Face Qwen2ForCausalLM training on one GPU, built from a Qwen2Config (no weights downloaded).

The published Qwen2-0.5B shape (494.0M parameters, as the script prints: 24 layers, width 896, 14 query heads sharing
2 key/value heads, SwiGLU MLP 4864, a 151,936-token vocabulary whose embedding is tied to the output
layer, biases on the query/key/value projections), attn_implementation="sdpa", causal-LM loss
computed by the model from labels = input_ids, fused AdamW with gradient clipping.

Launch (the defaults: 4 sequences of 1024 tokens, bf16 autocast):

    python benchmarks/validation/workloads/hf_qwen2.py --batch-size 4 --seq-len 1024 --precision bf16-autocast

The last line printed is `MAYA_RESULT {json}` with the CUDA-event time of every measured step (ms)
and the peak memory after warm-up (bytes).
"""

import argparse
import json
import statistics
from contextlib import nullcontext

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

device = "cuda"
LEARNING_RATE = 3e-4
VOCAB_SIZE = 151936


def build_model(args, device):
    config = Qwen2Config(
        vocab_size=VOCAB_SIZE, hidden_size=args.hidden_size, intermediate_size=args.intermediate_size,
        num_hidden_layers=args.num_layers, num_attention_heads=args.num_heads,
        num_key_value_heads=args.num_kv_heads, max_position_embeddings=max(2048, args.seq_len),
        tie_word_embeddings=True, use_cache=False, attn_implementation="sdpa",
    )
    model = Qwen2ForCausalLM(config).to(device)
    if args.checkpoint:
        model.gradient_checkpointing_enable()
    if args.precision == "bf16":
        model = model.to(torch.bfloat16)
    return model


def get_batch(args, device):
    # Synthetic token ids, (B, T) int64; the model shifts labels by one position itself.
    input_ids = torch.randint(0, VOCAB_SIZE, (args.batch_size, args.seq_len), device=device)
    return input_ids, input_ids


def compute_loss(model, batch):
    input_ids, labels = batch
    return model(input_ids=input_ids, labels=labels).loss


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-layers", type=int, default=24, help="decoder layers")
    p.add_argument("--hidden-size", type=int, default=896, help="width")
    p.add_argument("--intermediate-size", type=int, default=4864, help="SwiGLU MLP width")
    p.add_argument("--num-heads", type=int, default=14, help="query heads")
    p.add_argument("--num-kv-heads", type=int, default=2, help="key/value heads (grouped-query attention)")
    p.add_argument("--batch-size", type=int, default=4, help="sequences per step")
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
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, weight_decay=0.01, fused=True)
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
