"""Data-dependent selections whose results feed further GPU ops (MoE-style routing)."""

import torch
x = torch.randn(8, 4, device="cuda")
idx = torch.nonzero(x[:, 0] > 0).squeeze(-1)
y = torch.zeros(8, 4, device="cuda").index_add(0, idx, x[idx])
m = x[x > 0]
print(y.shape, m.shape, idx.device)
print("all/any:", bool((x > 0).all()), bool(torch.isnan(x).any()))
