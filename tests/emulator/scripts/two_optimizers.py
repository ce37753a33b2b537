"""A small GAN: each training step steps the discriminator's optimizer (`--d-steps` times) and then
the generator's. `--mark` also calls `maya.mark_iteration()` after each training step; `--order
unrepeating` steps the generator's optimizer only in the last training step."""

import argparse

import torch
import torch.nn.functional as F

import maya

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=4)
p.add_argument("--d-steps", type=int, default=1)
p.add_argument("--mark", action="store_true")
p.add_argument("--order", choices=("cycle", "unrepeating"), default="cycle")
args = p.parse_args()

gen = torch.nn.Sequential(torch.nn.Linear(64, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256)).cuda()
disc = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1)).cuda()
opt_g = torch.optim.Adam(gen.parameters(), lr=2e-4)
opt_d = torch.optim.SGD(disc.parameters(), lr=1e-2, momentum=0.9)
ones, zeros = torch.ones(128, 1, device="cuda"), torch.zeros(128, 1, device="cuda")
for step in range(args.steps):
    for _ in range(args.d_steps):
        fake = gen(torch.randn(128, 64, device="cuda")).detach()
        real = torch.randn(128, 256, device="cuda")
        d_loss = F.binary_cross_entropy_with_logits(disc(real), ones) + F.binary_cross_entropy_with_logits(disc(fake), zeros)
        opt_d.zero_grad()
        d_loss.backward()
        opt_d.step()
    if args.order == "cycle" or step == args.steps - 1:
        g_loss = F.binary_cross_entropy_with_logits(disc(gen(torch.randn(128, 64, device="cuda"))), ones)
        opt_g.zero_grad()
        g_loss.backward()
        opt_g.step()
    if args.mark:
        maya.mark_iteration()
