"""A Hugging Face `Trainer` run with DeepSpeed, as users write it: a small GPT-2 from config, bf16,
DeepSpeed's AdamW, the ZeRO stage given as the argument, four steps. accelerate builds a `DummyOptim`
from the model's parameters before DeepSpeed moves the model to the GPU."""

import sys

from random_tokens import RandomTokens
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

deepspeed = {"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
             "bf16": {"enabled": "auto"}, "zero_optimization": {"stage": int(sys.argv[1])},
             "optimizer": {"type": "AdamW", "params": {"lr": "auto"}}}
model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=1000))
args = TrainingArguments(output_dir=sys.argv[2], per_device_train_batch_size=8, max_steps=4, bf16=True,
                         logging_steps=1, report_to=[], save_strategy="no", dataloader_num_workers=0,
                         deepspeed=deepspeed)
Trainer(model=model, args=args, train_dataset=RandomTokens()).train()
