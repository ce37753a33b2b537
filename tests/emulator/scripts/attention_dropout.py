"""One bf16 attention call with dropout, forward and backward, on q/k/v built as attention modules
build them (`x.view(B, S, H, D).transpose(1, 2)`): the signatures `maya profile --attention-dropout` times."""

import argparse

import torch
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--causal", action="store_true")
p.add_argument("--dropout", type=float, default=0.1)
args = p.parse_args()
b, s, h, d = 2, 128, 4, 64
q, k, v = (torch.randn(b, s, h * d, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
out = F.scaled_dot_product_attention(*(t.view(b, s, h, d).transpose(1, 2) for t in (q, k, v)),
                                     dropout_p=args.dropout, is_causal=args.causal)
out.transpose(1, 2).reshape(b, s, h * d).backward(torch.ones(b, s, h * d, device="cuda", dtype=torch.bfloat16))
torch.cuda.synchronize()
