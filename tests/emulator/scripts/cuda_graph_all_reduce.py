"""A forward and backward captured in a CUDA graph with the gradients' all-reduce inside it, replayed
each step; the optimizer steps outside the graph, as torchtitan's trainer does."""

import torch
import torch.distributed as dist

dist.init_process_group("nccl")
torch.cuda.set_device(dist.get_rank())
model = torch.nn.Linear(512, 512).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(64, 512, device="cuda")


def forward_backward():
    loss = model(x).square().mean()
    loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
    return loss


s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    forward_backward()  # warm-up: creates .grad, which the graph then accumulates into
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    static_loss = forward_backward()
for _ in range(3):
    g.replay()
    optimizer.step()
dist.destroy_process_group()
