"""Top-k mixture-of-experts routing written the usual ways (Mixtral/HF, `==` masks, bincount)."""

import torch
import torch.nn.functional as F

N, E, K = 64, 8, 2  # tokens, experts, experts per token
probs = F.softmax(torch.randn(N, E, device="cuda"), dim=-1)
weights, selected = torch.topk(probs, K, dim=-1)  # selected: (N, K) in [0, E)
expert_mask = F.one_hot(selected, E).permute(2, 1, 0)  # (E, K, N)
slot, token = torch.where(expert_mask[3])
print("where(one_hot):", tuple(token.shape))
print("nonzero(==):", tuple(torch.nonzero(selected == 5).shape))
print("bool index:", tuple(probs[selected[:, 0] != 2].shape))
counts = torch.bincount(selected.flatten(), minlength=E)
print("bincount:", tuple(counts.shape), counts[0].item())
hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
print("experts hit:", tuple(hit.shape))
print("unhinted:", tuple(torch.nonzero(probs > 0.5).shape))
