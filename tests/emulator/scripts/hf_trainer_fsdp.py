"""Hugging Face `Trainer` with FSDP (`fsdp="full_shard auto_wrap"`, each GPT2Block its own unit): a
small GPT-2 from config, bf16, four steps. accelerate shards the model, built on the host, with FSDP2's
`fully_shard` (transformers 5.17, accelerate 1.x), which moves it to the GPU itself. Argument: the
output directory."""

import sys

from random_tokens import RandomTokens
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

out = sys.argv[1]
model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=1000))
args = TrainingArguments(output_dir=out, per_device_train_batch_size=8, max_steps=4, bf16=True, logging_steps=1,
                         report_to=[], save_strategy="no", dataloader_num_workers=0,
                         fsdp="full_shard auto_wrap", fsdp_config={"transformer_layer_cls_to_wrap": ["GPT2Block"]})
Trainer(model=model, args=args, train_dataset=RandomTokens()).train()
