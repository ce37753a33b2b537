"""Runs out of memory growing a storage back (`UntypedStorage.resize_`, as FSDP2's unshard does) in a
backward hook, on the autograd engine's device thread."""

import torch

m = torch.nn.Linear(1024, 1024).cuda()
x = torch.randn(64, 1024, device="cuda", requires_grad=True)
shard = torch.empty(1024, device="cuda")
shard.untyped_storage().resize_(0)  # freed, as FSDP2 frees an unsharded parameter after use


def unshard(grad):
    shard.untyped_storage().resize_(200 * 2**30)  # more than any GPU holds
    return grad


y = m(x)
y.register_hook(unshard)
y.sum().backward()
print("bwd ok")
