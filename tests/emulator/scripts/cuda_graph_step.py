"""PyTorch's whole-network CUDA graph capture, as its documentation writes it: three warm-up steps on
a side stream, one capture of forward, backward and optimizer step, then a replay per step with new
data copied into the static input. Arguments: `graph` or `eager` (the same steps without a graph),
and the steps to run after the warm-up."""

import sys

import torch

mode, steps = sys.argv[1], int(sys.argv[2])
torch.manual_seed(0)
N, D_in, H, D_out = 16, 256, 256, 64
model = torch.nn.Sequential(torch.nn.Linear(D_in, H), torch.nn.ReLU(), torch.nn.Linear(H, H), torch.nn.ReLU(),
                            torch.nn.Linear(H, D_out)).cuda()
loss_fn = torch.nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
static_input = torch.randn(N, D_in, device="cuda")
static_target = torch.randn(N, D_out, device="cuda")

s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model(static_input), static_target).backward()
        optimizer.step()
torch.cuda.current_stream().wait_stream(s)

if mode == "graph":
    g = torch.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)
    assert not torch.cuda.is_current_stream_capturing()
    with torch.cuda.graph(g):
        assert torch.cuda.is_current_stream_capturing()
        static_loss = loss_fn(model(static_input), static_target)
        static_loss.backward()
        optimizer.step()
    for _ in range(steps):
        static_input.copy_(torch.randn(N, D_in, device="cuda"))
        g.replay()
else:
    for _ in range(steps):
        static_input.copy_(torch.randn(N, D_in, device="cuda"))
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model(static_input), static_target).backward()
        optimizer.step()
torch.cuda.synchronize()
