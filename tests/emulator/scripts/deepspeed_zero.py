"""A DeepSpeed training loop: a small transformer under `deepspeed.initialize`, ZeRO stage and
precision from the command line, DeepSpeed's FusedAdam (its "AdamW" optimizer) or a PyTorch
optimizer built before the engine moves the model to the GPU, gradient clipping, 3 steps.

    deepspeed_zero.py STAGE {bf16,fp16} {fused,client,offload}
"""

import sys

import deepspeed
import torch
import torch.nn as nn
import torch.nn.functional as F

stage, precision, optimizer = int(sys.argv[1]), sys.argv[2], sys.argv[3]
VOCAB, WIDTH = 512, 64


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(WIDTH)
        self.attn = nn.MultiheadAttention(WIDTH, 4, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(), nn.Linear(4 * WIDTH, WIDTH))

    def forward(self, x):
        y = self.norm(x)
        return x + self.attn(y, y, y, need_weights=False)[0] + self.mlp(y)


model = nn.Sequential(nn.Embedding(VOCAB, WIDTH), Block(), Block(), nn.Linear(WIDTH, VOCAB))
config = {
    "train_micro_batch_size_per_gpu": 4,
    "gradient_clipping": 1.0,
    precision: {"enabled": True},
    "zero_optimization": {"stage": stage, "overlap_comm": True, "contiguous_gradients": True,
                          **({"offload_optimizer": {"device": "cpu"}} if optimizer == "offload" else {})},
}
deepspeed.init_distributed()
if optimizer == "client":
    engine, *_ = deepspeed.initialize(model=model, optimizer=torch.optim.AdamW(model.parameters(), lr=1e-4),
                                      config=config)
else:
    config["optimizer"] = {"type": "AdamW", "params": {"lr": 1e-4}}
    engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
for _ in range(3):
    tokens = torch.randint(0, VOCAB, (4, 32), device=engine.device)
    loss = F.cross_entropy(engine(tokens).float().flatten(0, 1), tokens.flatten())
    engine.backward(loss)
    engine.step()
