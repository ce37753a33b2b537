"""Hugging Face transformers models built from a config (no weights), trained for two steps.

    python hf_models.py --model {gpt2,llama,bert}
"""

import argparse

import torch
from transformers import BertConfig, BertForMaskedLM, GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

p = argparse.ArgumentParser()
p.add_argument("--model", choices=["gpt2", "llama", "bert"], default="gpt2")
p.add_argument("--steps", type=int, default=2)
args = p.parse_args()

vocab, seq, batch = 256, 32, 2
if args.model == "gpt2":
    model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=vocab, n_positions=seq))
elif args.model == "llama":
    model = LlamaForCausalLM(LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2, vocab_size=vocab,
                                         max_position_embeddings=seq))
else:
    model = BertForMaskedLM(BertConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                       num_attention_heads=4, vocab_size=vocab, max_position_embeddings=seq))
model.config._attn_implementation = "sdpa"
model = model.cuda().train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
for step in range(args.steps):
    ids = torch.randint(0, vocab, (batch, seq)).cuda()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = model(input_ids=ids, labels=ids)
    out.loss.backward()
    opt.step()
    opt.zero_grad()
    print(f"{args.model} step {step} loss {out.loss.item():.3f}")
