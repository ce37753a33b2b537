"""One training step of a 70B-parameter Llama (80 layers, d=8192, GQA 64/8 heads, SwiGLU 28672)
in bf16 on one GPU: the weights alone are 140 GB, so an H200 runs out of memory in the step.

    python benchmarks/workloads/llama70b_step.py
"""

import torch
from transformers import LlamaConfig, LlamaForCausalLM

config = LlamaConfig(
    hidden_size=8192, intermediate_size=28672, num_hidden_layers=80, num_attention_heads=64,
    num_key_value_heads=8, vocab_size=128256, max_position_embeddings=4096,
)
config._attn_implementation = "sdpa"
model = LlamaForCausalLM(config).to(device="cuda", dtype=torch.bfloat16)
print(f"parameters: {sum(p.numel() for p in model.parameters()) / 1e9:.1f}B")
ids = torch.randint(0, config.vocab_size, (1, 256), device="cuda")
loss = model(input_ids=ids, labels=ids).loss
loss.backward()
