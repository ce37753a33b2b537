"""`torch.cuda.make_graphed_callables` on a block of a model (its forward and backward become two
graphs), trained eagerly around it for three steps; argument `eager` trains the same model without."""

import sys

import torch

graphed = sys.argv[1] == "graph"
torch.manual_seed(0)
block = torch.nn.Sequential(torch.nn.Linear(128, 128), torch.nn.GELU(), torch.nn.Linear(128, 128)).cuda()
head = torch.nn.Linear(128, 10).cuda()
x = torch.randn(32, 128, device="cuda", requires_grad=True)
if graphed:
    block = torch.cuda.make_graphed_callables(block, (x,))
optimizer = torch.optim.SGD([*block.parameters(), *head.parameters()], lr=0.1)
for _ in range(3):
    optimizer.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(head(block(torch.randn(32, 128, device="cuda"))),
                                             torch.randint(0, 10, (32,), device="cuda"))
    loss.backward()
    optimizer.step()
