"""DLRM-style click-through-rate model training on one GPU, with synthetic Criteo-like batches.

The model follows Naumov et al. 2019, "Deep Learning Recommendation Model": 13 dense features go
through a bottom MLP (13-512-256-128), 26 categorical features each pool --lookups-per-bag rows of
their own nn.EmbeddingBag table (128 wide), the pairwise dot products of those 27 vectors feed a top
MLP (1024-1024-512-256-1), and the loss is binary cross-entropy. The embedding tables hold most of
the parameters and get dense gradients, so the optimizer step is memory-bound. As with a CPU-side
data loader, each batch is made on the host and copied to the GPU.

Launch (the defaults: 4096 samples, 26 tables of 200000 rows, fp32, SGD):

    python benchmarks/validation/workloads/dlrm.py --batch-size 4096 --rows-per-table 200000

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
NUM_DENSE = 13  # Criteo's integer features
NUM_SPARSE = 26  # Criteo's categorical features


def mlp(sizes):
    layers = []
    for i in range(len(sizes) - 1):
        layers += [nn.Linear(sizes[i], sizes[i + 1]), nn.ReLU()]
    return nn.Sequential(*layers[:-1])  # no ReLU on the last layer


class DLRM(nn.Module):
    def __init__(self, rows_per_table, embedding_dim):
        super().__init__()
        self.bottom_mlp = mlp([NUM_DENSE, 512, 256, embedding_dim])
        self.embeddings = nn.ModuleList(
            [nn.EmbeddingBag(rows_per_table, embedding_dim, mode="sum") for _ in range(NUM_SPARSE)]
        )
        num_vectors = NUM_SPARSE + 1
        num_pairs = num_vectors * (num_vectors - 1) // 2  # 351
        self.top_mlp = mlp([embedding_dim + num_pairs, 1024, 1024, 512, 256, 1])
        rows, cols = torch.tril_indices(num_vectors, num_vectors, offset=-1)
        self.register_buffer("pair_rows", rows, persistent=False)
        self.register_buffer("pair_cols", cols, persistent=False)

    def forward(self, dense, sparse):
        # dense: (B, 13) float; sparse: (B, 26, lookups_per_bag) int64
        x = self.bottom_mlp(dense)  # (B, D)
        pooled = [table(sparse[:, i]) for i, table in enumerate(self.embeddings)]  # 26 x (B, D)
        vectors = torch.stack([x] + pooled, dim=1)  # (B, 27, D)
        dots = torch.bmm(vectors, vectors.transpose(1, 2))  # (B, 27, 27)
        pairs = dots[:, self.pair_rows, self.pair_cols]  # (B, 351), each unordered pair once
        return self.top_mlp(torch.cat([x, pairs], dim=1)).squeeze(1)  # (B,) logits


def build_model(args, device):
    return DLRM(args.rows_per_table, args.embedding_dim).to(device)


def get_batch(args, device):
    dense = torch.rand(args.batch_size, NUM_DENSE)  # made on the host, as a data loader would
    sparse = torch.randint(0, args.rows_per_table, (args.batch_size, NUM_SPARSE, args.lookups_per_bag))
    clicks = torch.randint(0, 2, (args.batch_size,)).float()
    return dense.to(device), sparse.to(device), clicks.to(device)


def compute_loss(model, batch):
    dense, sparse, clicks = batch
    return F.binary_cross_entropy_with_logits(model(dense, sparse), clicks)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch-size", type=int, default=4096, help="samples per step")
    p.add_argument("--rows-per-table", type=int, default=200000, help="rows in each of the 26 tables")
    p.add_argument("--embedding-dim", type=int, default=128, help="embedding width")
    p.add_argument("--lookups-per-bag", type=int, default=4, help="rows summed per categorical feature")
    p.add_argument("--precision", choices=["bf16-autocast", "fp32"], default="fp32")
    p.add_argument("--steps", type=int, default=12, help="measured steps")
    p.add_argument("--warmup", type=int, default=4, help="unmeasured steps before them")
    p.add_argument("--log-interval", type=int, default=4, help="print the loss every this many steps")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    torch.manual_seed(0)
    model = build_model(args, device)
    print(f"number of parameters: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
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
