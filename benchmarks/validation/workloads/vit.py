"""Vision Transformer (ViT-B/16) image-classification training on one GPU, with synthetic images.

The model follows Dosovitskiy et al. 2021, "An Image is Worth 16x16 Words", table 1 (ViT-Base:
12 layers, width 768, 12 heads, MLP 3072): a 16x16 stride-16 convolution cuts a 224x224 image
into 196 patch tokens, a learned class token and position embeddings are added, and pre-LayerNorm
transformer blocks use F.scaled_dot_product_attention (no mask). AdamW as in DeiT.

Launch (the defaults: 64 images of 224x224, bf16 autocast):

    python benchmarks/validation/workloads/vit.py --batch-size 64 --precision bf16-autocast

The last line printed is `MAYA_RESULT {json}` with the CUDA-event time of every measured step (ms)
and the peak memory after warm-up (bytes).
"""

import argparse
import json
import statistics
from contextlib import nullcontext

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

device = "cuda"


class PatchEmbed(nn.Module):
    def __init__(self, image_size, patch_size, dim):
        super().__init__()
        self.proj = nn.Conv2d(3, dim, kernel_size=patch_size, stride=patch_size)
        self.num_patches = (image_size // patch_size) ** 2

    def forward(self, x):
        # (B, 3, H, W) -> (B, dim, H/p, W/p) -> (B, num_patches, dim)
        return self.proj(x).flatten(2).transpose(1, 2)


class Attention(nn.Module):
    def __init__(self, dim, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        # (B, N, 3C) -> (3, B, n_heads, N, head_dim)
        qkv = self.qkv(x).view(B, N, 3, self.n_heads, C // self.n_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        y = F.scaled_dot_product_attention(q, k, v)  # (B, n_heads, N, head_dim)
        return self.proj(y.transpose(1, 2).reshape(B, N, C))


class Block(nn.Module):
    def __init__(self, dim, n_heads, mlp_ratio):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = Attention(dim, n_heads)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = nn.Sequential(
            nn.Linear(dim, mlp_ratio * dim), nn.GELU(), nn.Linear(mlp_ratio * dim, dim)
        )

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class VisionTransformer(nn.Module):
    def __init__(self, image_size=224, patch_size=16, dim=768, depth=12, n_heads=12, mlp_ratio=4,
                 num_classes=1000, checkpoint=False):
        super().__init__()
        self.checkpoint = checkpoint
        self.patch_embed = PatchEmbed(image_size, patch_size, dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.randn(1, self.patch_embed.num_patches + 1, dim) * 0.02)
        self.blocks = nn.ModuleList([Block(dim, n_heads, mlp_ratio) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, images):
        x = self.patch_embed(images)  # (B, 196, dim)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed  # (B, 197, dim)
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False) if self.checkpoint and self.training else block(x)
        return self.head(self.norm(x)[:, 0])  # classify from the class token: (B, num_classes)


def build_model(args, device):
    model = VisionTransformer(image_size=args.image_size, patch_size=args.patch_size, dim=args.dim,
                              depth=args.depth, n_heads=args.n_heads, checkpoint=args.checkpoint)
    return model.to(device)


def get_batch(args, device):
    images = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=device)
    labels = torch.randint(0, 1000, (args.batch_size,), device=device)
    return images, labels


def compute_loss(model, batch):
    images, labels = batch
    return F.cross_entropy(model(images), labels, label_smoothing=0.1)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch-size", type=int, default=64, help="images per step")
    p.add_argument("--image-size", type=int, default=224, help="image height and width (pixels)")
    p.add_argument("--patch-size", type=int, default=16, help="patch height and width (pixels)")
    p.add_argument("--dim", type=int, default=768, help="transformer width")
    p.add_argument("--depth", type=int, default=12, help="transformer blocks")
    p.add_argument("--n-heads", type=int, default=12, help="attention heads")
    p.add_argument("--precision", choices=["bf16-autocast", "fp32"], default="bf16-autocast")
    p.add_argument("--checkpoint", action="store_true", help="activation checkpointing per block")
    p.add_argument("--steps", type=int, default=12, help="measured steps")
    p.add_argument("--warmup", type=int, default=4, help="unmeasured steps before them")
    p.add_argument("--log-interval", type=int, default=4, help="print the loss every this many steps")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    torch.manual_seed(0)
    model = build_model(args, device)
    print(f"number of parameters: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
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
