"""DDPM denoising U-Net training on one GPU, with synthetic 64x64 images.

The network follows Ho et al. 2020, "Denoising Diffusion Probabilistic Models", appendix B: a
U-Net of ResNet blocks (GroupNorm(32), SiLU, 3x3 convolutions) at channel multipliers (1, 2, 2, 2),
two blocks per resolution, self-attention at 16x16, and a sinusoidal timestep embedding added in
every block. A training step noises x0 to x_t at a random timestep of a linear beta schedule and
regresses the noise (MSE). Adam, lr 2e-4, as in the paper.

Launch (the defaults: 64 images of 64x64, base width 128, bf16 autocast):

    python benchmarks/validation/workloads/unet.py --batch-size 64 --image-size 64 --precision bf16-autocast

The last line printed is `MAYA_RESULT {json}` with the CUDA-event time of every measured step (ms)
and the peak memory after warm-up (bytes).
"""

import argparse
import json
import math
import statistics
from contextlib import nullcontext

import torch
import torch.nn as nn
import torch.nn.functional as F

device = "cuda"
NUM_TIMESTEPS = 1000  # diffusion steps T
CHANNEL_MULTS = (1, 2, 2, 2)
ATTENTION_RESOLUTION = 16  # pixels
CLIP_NORM = 1.0


def timestep_embedding(t, dim):
    """Sinusoidal embedding of integer timesteps t (B,) -> (B, dim) (Vaswani et al. 2017, 3.5)."""
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device) / half)  # (half,)
    args = t.float()[:, None] * freqs[None]  # (B, half)
    return torch.cat([torch.sin(args), torch.cos(args)], dim=1)


class ResBlock(nn.Module):
    def __init__(self, in_ch, out_ch, temb_dim):
        super().__init__()
        self.norm1 = nn.GroupNorm(32, in_ch)
        self.conv1 = nn.Conv2d(in_ch, out_ch, 3, padding=1)
        self.temb_proj = nn.Linear(temb_dim, out_ch)
        self.norm2 = nn.GroupNorm(32, out_ch)
        self.dropout = nn.Dropout(0.1)
        self.conv2 = nn.Conv2d(out_ch, out_ch, 3, padding=1)
        self.skip = nn.Conv2d(in_ch, out_ch, 1) if in_ch != out_ch else nn.Identity()

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.temb_proj(F.silu(temb))[:, :, None, None]  # broadcast over H, W
        h = self.conv2(self.dropout(F.silu(self.norm2(h))))
        return self.skip(x) + h


class AttnBlock(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.norm = nn.GroupNorm(32, ch)
        self.qkv = nn.Conv2d(ch, 3 * ch, 1)
        self.proj = nn.Conv2d(ch, ch, 1)

    def forward(self, x):
        B, C, H, W = x.shape
        q, k, v = self.qkv(self.norm(x)).reshape(B, 3, C, H * W).transpose(2, 3).unbind(1)  # each (B, HW, C)
        y = F.scaled_dot_product_attention(q[:, None], k[:, None], v[:, None])[:, 0]  # one head: (B, HW, C)
        return x + self.proj(y.transpose(1, 2).reshape(B, C, H, W))


class UNet(nn.Module):
    def __init__(self, ch=128, image_size=64, num_res_blocks=2):
        super().__init__()
        temb_dim = 4 * ch
        self.ch = ch
        self.temb = nn.Sequential(nn.Linear(ch, temb_dim), nn.SiLU(), nn.Linear(temb_dim, temb_dim))
        self.conv_in = nn.Conv2d(3, ch, 3, padding=1)
        self.down = nn.ModuleList()
        skip_channels, in_ch, res = [ch], ch, image_size
        for level, mult in enumerate(CHANNEL_MULTS):
            for _ in range(num_res_blocks):
                self.down.append(ResBlock(in_ch, ch * mult, temb_dim))
                in_ch = ch * mult
                if res == ATTENTION_RESOLUTION:
                    self.down.append(AttnBlock(in_ch))
                skip_channels.append(in_ch)
            if level != len(CHANNEL_MULTS) - 1:
                self.down.append(nn.Conv2d(in_ch, in_ch, 3, stride=2, padding=1))
                skip_channels.append(in_ch)
                res //= 2
        self.mid = nn.ModuleList([ResBlock(in_ch, in_ch, temb_dim), AttnBlock(in_ch), ResBlock(in_ch, in_ch, temb_dim)])
        self.up = nn.ModuleList()
        for level, mult in reversed(list(enumerate(CHANNEL_MULTS))):
            for _ in range(num_res_blocks + 1):
                self.up.append(ResBlock(in_ch + skip_channels.pop(), ch * mult, temb_dim))
                in_ch = ch * mult
                if res == ATTENTION_RESOLUTION:
                    self.up.append(AttnBlock(in_ch))
            if level != 0:
                self.up.append(nn.Upsample(scale_factor=2, mode="nearest"))
                self.up.append(nn.Conv2d(in_ch, in_ch, 3, padding=1))
                res *= 2
        self.norm_out = nn.GroupNorm(32, in_ch)
        self.conv_out = nn.Conv2d(in_ch, 3, 3, padding=1)

    def forward(self, x, t):
        temb = self.temb(timestep_embedding(t, self.ch))  # (B, 4 ch)
        h = self.conv_in(x)
        skips = [h]
        for module in self.down:
            if isinstance(module, ResBlock):
                h = module(h, temb)
            else:
                h = module(h)
            if not isinstance(module, AttnBlock):
                skips.append(h)
            else:
                skips[-1] = h  # an attention block refines the skip of the ResBlock before it
        for module in self.mid:
            h = module(h, temb) if isinstance(module, ResBlock) else module(h)
        for module in self.up:
            if isinstance(module, ResBlock):
                h = module(torch.cat([h, skips.pop()], dim=1), temb)
            else:
                h = module(h)
        return self.conv_out(F.silu(self.norm_out(h)))  # predicted noise, (B, 3, H, W)


class Diffusion(nn.Module):
    """Wraps the U-Net with the forward (noising) process: q(x_t | x_0), Ho et al. 2020 eq. 4."""

    def __init__(self, unet):
        super().__init__()
        self.unet = unet
        betas = torch.linspace(1e-4, 0.02, NUM_TIMESTEPS)  # linear schedule, section 4
        self.register_buffer("alphas_cumprod", torch.cumprod(1.0 - betas, dim=0), persistent=False)

    def forward(self, x0, t, noise):
        a = self.alphas_cumprod[t][:, None, None, None]  # (B, 1, 1, 1)
        x_t = a.sqrt() * x0 + (1.0 - a).sqrt() * noise
        return F.mse_loss(self.unet(x_t, t), noise)


def build_model(args, device):
    return Diffusion(UNet(ch=args.base_channels, image_size=args.image_size)).to(device)


def get_batch(args, device):
    x0 = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=device)
    t = torch.randint(0, NUM_TIMESTEPS, (args.batch_size,), device=device)
    noise = torch.randn_like(x0)
    return x0, t, noise


def compute_loss(model, batch):
    return model(*batch)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch-size", type=int, default=64, help="images per step")
    p.add_argument("--image-size", type=int, default=64, help="image height and width (pixels)")
    p.add_argument("--base-channels", type=int, default=128, help="channels at full resolution")
    p.add_argument("--precision", choices=["bf16-autocast", "fp32"], default="bf16-autocast")
    p.add_argument("--steps", type=int, default=12, help="measured steps")
    p.add_argument("--warmup", type=int, default=4, help="unmeasured steps before them")
    p.add_argument("--log-interval", type=int, default=4, help="print the loss every this many steps")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    torch.manual_seed(0)
    model = build_model(args, device)
    print(f"number of parameters: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M")
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-4)
    ctx = torch.autocast(device, dtype=torch.bfloat16) if args.precision == "bf16-autocast" else nullcontext()

    events = []  # (start, end) CUDA events of each measured step
    for step in range(args.warmup + args.steps):
        if step == args.warmup:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        batch = get_batch(args, device)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        with ctx:
            loss = compute_loss(model, batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP_NORM)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        end.record()
        if step >= args.warmup:
            events.append((start, end))
        if step % args.log_interval == 0 or step == args.warmup + args.steps - 1:
            print(f"step {step}: loss {loss.item():.4f}")
    torch.cuda.synchronize()

    step_ms = [start.elapsed_time(end) for start, end in events]
    result = {
        "step_ms": step_ms,
        "median_step_ms": statistics.median(step_ms),
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "max_memory_reserved": torch.cuda.max_memory_reserved(),
    }
    print("MAYA_RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
