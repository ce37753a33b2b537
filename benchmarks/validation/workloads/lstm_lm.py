"""LSTM word-level language-model training on one GPU, with synthetic tokens.

The model follows pytorch/examples word_language_model: an embedding, a multi-layer nn.LSTM
(cuDNN), dropout and a decoder tied to the embedding (Inan et al. 2017), on sequence-first
(T, B) batches. Trained with plain SGD (lr 20) and gradient clipping at 0.25, as that example does.
The vocabulary is WikiText-2's 33278 words.

Launch (the defaults: 64 sequences of 128 tokens, 2 layers of 1024, fp32):

    python benchmarks/validation/workloads/lstm_lm.py --batch-size 64 --seq-len 128 --hidden-size 1024 --num-layers 2

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
VOCAB_SIZE = 33278  # WikiText-2
CLIP_NORM = 0.25


class RNNModel(nn.Module):
    def __init__(self, vocab_size, hidden_size, num_layers, dropout):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(vocab_size, hidden_size)
        self.rnn = nn.LSTM(hidden_size, hidden_size, num_layers, dropout=dropout)
        self.decoder = nn.Linear(hidden_size, vocab_size)
        self.decoder.weight = self.encoder.weight  # tied, so the embedding width equals hidden_size
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def forward(self, tokens):
        # tokens: (T, B) -> emb (T, B, H) -> output (T, B, H) -> logits (T, B, vocab_size)
        emb = self.drop(self.encoder(tokens))
        output, _ = self.rnn(emb)  # the hidden state starts at zero for every batch
        return self.decoder(self.drop(output))


def build_model(args, device):
    return RNNModel(VOCAB_SIZE, args.hidden_size, args.num_layers, args.dropout).to(device)


def get_batch(args, device):
    tokens = torch.randint(0, VOCAB_SIZE, (args.seq_len + 1, args.batch_size), device=device)  # (T+1, B)
    return tokens[:-1], tokens[1:]


def compute_loss(model, batch):
    inputs, targets = batch
    logits = model(inputs)
    return F.cross_entropy(logits.view(-1, VOCAB_SIZE), targets.reshape(-1))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch-size", type=int, default=64, help="sequences per step")
    p.add_argument("--seq-len", type=int, default=128, help="tokens per sequence (BPTT length)")
    p.add_argument("--hidden-size", type=int, default=1024, help="embedding and LSTM width")
    p.add_argument("--num-layers", type=int, default=2, help="LSTM layers")
    p.add_argument("--dropout", type=float, default=0.5, help="dropout probability")
    p.add_argument("--precision", choices=["fp32"], default="fp32")
    p.add_argument("--steps", type=int, default=12, help="measured steps")
    p.add_argument("--warmup", type=int, default=4, help="unmeasured steps before them")
    p.add_argument("--log-interval", type=int, default=4, help="print the loss every this many steps")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    torch.manual_seed(0)
    model = build_model(args, device)
    print(f"number of parameters: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M")
    optimizer = torch.optim.SGD(model.parameters(), lr=20.0)
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
