"""LoRA fine-tuning with Hugging Face PEFT: a bf16 Llama with gradient checkpointing, adapters on the
attention projections, three steps, the adapter saved at the end. Argument: the output directory."""

import sys

import torch
from peft import LoraConfig, get_peft_model
from transformers import LlamaConfig, LlamaForCausalLM

config = LlamaConfig(vocab_size=1000, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2)
model = LlamaForCausalLM(config).to(torch.bfloat16).cuda()
model.gradient_checkpointing_enable()
model.enable_input_require_grads()
model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"], lora_dropout=0.05))
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
ids = torch.randint(0, 1000, (4, 128), device="cuda")
for _ in range(3):
    model(input_ids=ids, labels=ids).loss.backward()
    opt.step()
    opt.zero_grad()
model.save_pretrained(sys.argv[1])
