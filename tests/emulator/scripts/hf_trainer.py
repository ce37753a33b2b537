"""A Hugging Face `Trainer` run as users write it: a small GPT-2 from config, bf16, four steps, a
checkpoint every two steps (safetensors weights, the optimizer's state, RNG states) and
`save_model` at the end. Argument: the output directory."""

import sys

from random_tokens import RandomTokens
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

out = sys.argv[1]
model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=1000))
args = TrainingArguments(output_dir=out, per_device_train_batch_size=8, max_steps=4, bf16=True, logging_steps=1,
                         report_to=[], save_strategy="steps", save_steps=2, dataloader_num_workers=0)
trainer = Trainer(model=model, args=args, train_dataset=RandomTokens())
trainer.train()
trainer.save_model(out + "/final")
