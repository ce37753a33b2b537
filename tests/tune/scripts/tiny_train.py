"""A tiny MLP training loop for tuner tests, with flags that make chosen micro-batch sizes fail.

    maya emulate tests/tune/scripts/tiny_train.py --batch 4 --accum 2
"""

import argparse
import os
import time

import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=2)
p.add_argument("--batch", type=int, default=4)
p.add_argument("--accum", type=int, default=1)
p.add_argument("--dim", type=int, default=256)
p.add_argument("--precision", choices=["bf16", "fp32"], default="fp32")
p.add_argument("--oom-on-batch", type=int, default=0, help="allocate more than any GPU holds at this micro-batch size")
p.add_argument("--oom-from-batch", type=int, default=0, help="allocate more than any GPU holds from this micro-batch size up")
p.add_argument("--fail-on-batch", type=int, default=0, help="raise at this micro-batch size")
p.add_argument("--exit-on-batch", type=int, default=0, help="kill the whole process at this micro-batch size")
p.add_argument("--block-on-batch", type=int, default=0, help="at this micro-batch size, wait for --block-until")
p.add_argument("--block-until", default="", help="a file whose creation releases --block-on-batch")
args = p.parse_args()

while args.batch == args.block_on_batch and not os.path.exists(args.block_until):
    time.sleep(0.1)

if args.batch == args.fail_on_batch:
    raise RuntimeError(f"tiny_train refuses micro-batch {args.batch}")
if args.batch == args.exit_on_batch:
    os._exit(3)
model = nn.Sequential(nn.Linear(args.dim, 4 * args.dim), nn.GELU(), nn.Linear(4 * args.dim, args.dim)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
dtype = torch.bfloat16 if args.precision == "bf16" else torch.float32
for step in range(args.steps):
    for micro in range(args.accum):
        x = torch.randn(args.batch, args.dim, device="cuda")
        if args.batch == args.oom_on_batch or 0 < args.oom_from_batch <= args.batch:
            torch.empty(1 << 42, device="cuda")  # 4 TiB
        with torch.autocast("cuda", dtype=dtype, enabled=dtype != torch.float32):
            loss = model(x).square().mean() / args.accum
        loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
