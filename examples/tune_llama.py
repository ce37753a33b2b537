"""Tune config: the cheapest way to pre-train a Llama-70B-class model on up to 1,024 H100s.

The model is examples/train_gpt.py at Llama-2-70B's width, depth, heads, vocabulary and context
(d=8192, 80 layers, 64 heads, 128,256 tokens, 4,096-token sequences; 65B parameters with a GELU MLP
of 4d). Fixed work: 2T tokens at a global batch of 1,024 sequences (4M tokens per step, as Llama 2).
Searched: tensor, pipeline and data parallelism (DDP or FSDP) with the pipeline schedule,
micro-batch, activation checkpointing, and DGX H100 clusters of 8 to 128 nodes at two prices.

    maya tune examples/tune_llama.py                                     # local Ray
    ray job submit --working-dir . -- maya tune examples/tune_llama.py   # a Ray cluster (cluster/README.md)

Configurations whose degrees do not divide the world size, the global batch, the 64 heads or the
80 layers, or that leave a pipeline with fewer micro-batches than stages, are pruned before any
emulation. Configurations that differ only in price share one emulation (the trace cache).
Needs multi-rank emulation (world sizes > 1).
"""

from ray import tune

HEADS, LAYERS = 64, 80

script = "train_gpt.py"
script_args = [
    "--steps", "2", "--seq", "4096", "--dim", "8192", "--layers", str(LAYERS), "--heads", str(HEADS),
    "--vocab", "128256", "--precision", "bf16",
]

search_space = {
    "tp": tune.choice([1, 2, 4, 8]),
    "pp": tune.choice([1, 2, 4, 8, 16]),
    "pp_schedule": tune.choice(["1f1b", "interleaved"]),
    "dp_mode": tune.choice(["ddp", "fsdp"]),
    "micro_batch": tune.choice([1, 2, 4, 8]),
    "checkpoint": tune.choice(["none", "nonreentrant"]),
}

global_batch = 1024
train_tokens = 2_000_000_000_000
tokens_per_sample = 4096

# The same DGX H100 nodes on demand and on a reserved contract (cheaper, up to 64 nodes).
clusters = [
    {"preset": "dgx-h100", "nodes": [8, 16, 32, 64, 128], "price_per_gpu_hour_usd": 3.00, "label": "h100-on-demand"},
    {"preset": "dgx-h100", "nodes": [8, 16, 32, 64], "price_per_gpu_hour_usd": 2.10, "label": "h100-reserved"},
]
max_gpus = 1024


def check(config):
    """Model-specific rules: whole heads per tensor-parallel rank, whole layers per stage, a full pipeline."""
    if HEADS % config["tp"]:
        return f"{HEADS} heads do not split over tp={config['tp']}"
    if LAYERS % config["pp"]:
        return f"{LAYERS} layers do not split over pp={config['pp']}"
    if config["pp"] > 1 and config["accum"] < config["pp"]:
        return f"accum={config['accum']} micro-batches cannot fill pp={config['pp']} stages"
    if config.get("pp_schedule") == "interleaved" and config["pp"] > 1 and config["accum"] % config["pp"]:
        return f"the interleaved schedule needs accum={config['accum']} to be a multiple of pp={config['pp']}"
    return None


objective = "cost"
search = "hyperopt"
num_samples = 1000
seed = 0
top_k = 10
name = "llama70b-h100"
