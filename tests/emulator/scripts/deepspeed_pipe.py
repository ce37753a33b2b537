"""A DeepSpeed pipeline: a small model split into two stages by `PipelineModule`, trained with
`engine.train_batch` over four micro-batches."""

import deepspeed
import torch
import torch.nn as nn
import torch.nn.functional as F
from deepspeed.pipe import PipelineModule

VOCAB, WIDTH = 512, 64


def loss_fn(logits, labels):
    return F.cross_entropy(logits.float().flatten(0, 1), labels.flatten())


def batches():
    while True:
        tokens = torch.randint(0, VOCAB, (4, 32))
        yield tokens, tokens


deepspeed.init_distributed()
layers = [nn.Embedding(VOCAB, WIDTH), nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, VOCAB)]
model = PipelineModule(layers=layers, num_stages=2, loss_fn=loss_fn)
config = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4, "bf16": {"enabled": True},
          "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}}
engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
data = batches()
for _ in range(2):
    engine.train_batch(data)
