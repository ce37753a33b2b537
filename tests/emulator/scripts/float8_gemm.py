"""One float8 GEMM a step (`torch._scaled_mm`, as float8 training libraries run a linear layer)."""

import torch

a = torch.randn(1024, 512, device="cuda")
w = torch.randn(768, 512, device="cuda", requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
one = torch.tensor(1.0, device="cuda")
for _ in range(2):
    y = torch._scaled_mm(a.to(torch.float8_e4m3fn), w.detach().to(torch.float8_e4m3fn).t(), scale_a=one, scale_b=one,
                         out_dtype=torch.bfloat16)
    (y.float().mean() * w.sum()).backward()
    opt.step()
    opt.zero_grad()
