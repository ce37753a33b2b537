"""Attention with a learned relative-position bias passed to SDPA as its mask, the way T5 does it.

The bias is looked up as (q, k, heads) and permuted to (1, heads, q, k) without a copy, so its last
dim has stride `heads` (transformers <= 5.17's T5Attention.compute_bias); `--contiguous` copies it
first (transformers >= 5.24's create_position_bias_mask). Two steps of bf16 autocast training with
attention dropout.

    python relative_position_bias.py [--contiguous]
"""

import argparse

import torch
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--contiguous", action="store_true", help="copy the bias to a contiguous layout first")
args = p.parse_args()

batch, heads, seq, head_dim, buckets = 8, 4, 256, 32, 32
bias_table = torch.nn.Embedding(buckets, heads).cuda()
query = torch.randn(batch, heads, seq, head_dim, device="cuda", requires_grad=True)
bucket_of = torch.randint(0, buckets, (seq, seq), device="cuda")
optimizer = torch.optim.SGD([query, *bias_table.parameters()], lr=0.1)
for step in range(2):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        bias = bias_table(bucket_of).permute(2, 0, 1).unsqueeze(0)  # (1, heads, seq, seq), stride(-1) == heads
        if args.contiguous:
            bias = bias.contiguous()
        out = F.scaled_dot_product_attention(query, query, query, attn_mask=bias, dropout_p=0.1)
    out.float().sum().backward()
    optimizer.step()
    optimizer.zero_grad()
