"""Hugging Face WhisperForConditionalGeneration training on one GPU, built from a WhisperConfig (no weights downloaded).

The published whisper-base shape (72.6M parameters, as the script prints: a two-convolution stem over 80 log-mel
bins, 6 encoder and 6 decoder layers of width 512 with 8 heads and a GELU MLP of 2048, a 51,865-token
vocabulary), attn_implementation="sdpa". Each sample is 30 s of synthetic log-mel features (3000
frames, which the stride-2 stem halves to the encoder's 1500 positions) and a synthetic transcript
of `--label-len` tokens; the model computes the sequence-to-sequence loss from the labels. AdamW
with gradient clipping.

Launch (the defaults: 16 samples, 128-token transcripts, bf16 autocast):

    python benchmarks/validation/workloads/hf_whisper.py --batch-size 16 --label-len 128 --precision bf16-autocast

The last line printed is `MAYA_RESULT {json}` with the CUDA-event time of every measured step (ms)
and the peak memory after warm-up (bytes).
"""

import argparse
import json
import statistics
from contextlib import nullcontext

import torch
from transformers import WhisperConfig, WhisperForConditionalGeneration

device = "cuda"
LEARNING_RATE = 1e-4
VOCAB_SIZE = 51865
MEL_BINS = 80
FRAMES = 3000


def build_model(args, device):
    config = WhisperConfig(
        vocab_size=VOCAB_SIZE, num_mel_bins=MEL_BINS, d_model=args.d_model,
        encoder_layers=args.layers, decoder_layers=args.layers,
        encoder_attention_heads=args.heads, decoder_attention_heads=args.heads,
        encoder_ffn_dim=4 * args.d_model, decoder_ffn_dim=4 * args.d_model,
        max_source_positions=FRAMES // 2, max_target_positions=448,
        use_cache=False, attn_implementation="sdpa",
    )
    model = WhisperForConditionalGeneration(config).to(device)
    if args.precision == "bf16":
        model = model.to(torch.bfloat16)
    return model


def get_batch(args, device):
    # Synthetic log-mel features (B, 80, 3000) and transcript token ids (B, label_len).
    dtype = torch.bfloat16 if args.precision == "bf16" else torch.float32
    features = torch.randn(args.batch_size, MEL_BINS, FRAMES, device=device, dtype=dtype)
    labels = torch.randint(0, VOCAB_SIZE, (args.batch_size, args.label_len), device=device)
    return features, labels


def compute_loss(model, batch):
    features, labels = batch
    return model(input_features=features, labels=labels).loss


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--d-model", type=int, default=512, help="width")
    p.add_argument("--layers", type=int, default=6, help="encoder layers, and as many decoder layers")
    p.add_argument("--heads", type=int, default=8, help="attention heads")
    p.add_argument("--batch-size", type=int, default=16, help="samples per step")
    p.add_argument("--label-len", type=int, default=128, help="transcript tokens per sample")
    p.add_argument("--precision", choices=["bf16-autocast", "bf16", "fp32"], default="bf16-autocast")
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
