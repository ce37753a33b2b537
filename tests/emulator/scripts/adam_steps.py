"""Three Adam steps (foreach and fused-free, the default on CUDA) on a small MLP; fails unless the
optimizer's step counters reached 3 (they live on the CPU and are read back with .item())."""

import torch

model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64)).cuda()
opt = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=0.01, foreach=True)
for _ in range(3):
    loss = model(torch.randn(32, 64, device="cuda")).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
steps = {float(state["step"].item()) for state in opt.state.values()}
assert steps == {3.0}, f"Adam's step counters read {steps}, not 3"
print("steps", steps)
