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
emulation. Configurations that differ only in price share one emulation (the trace cache), and a
configuration of many micro-batches is extrapolated from emulations of two small counts
(maya/tune/accum_extrapolation.py), and the 80 identical blocks from two shallow copies of the model
(maya/tune/depth_extrapolation.py). The script builds its layers on the meta device and allocates
only each rank's shard (--init-device meta). Many pipelined configurations still run out of memory:
torch.distributed.pipelining keeps the last stage's output of every micro-batch (logits of 128,256
tokens per position) until the step ends, and concatenates them at its end.
"""

from ray import tune

HEADS, LAYERS = 64, 80

script = "train_gpt.py"
# One optimizer step per configuration: a 70B world costs minutes to emulate, and the first step's
# prediction differs from later ones only by the optimizer state's one-time allocation.
script_args = [
    "--steps", "1", "--seq", "4096", "--dim", "8192", "--layers", str(LAYERS), "--heads", str(HEADS),
    "--vocab", "128256", "--precision", "bf16", "--init-device", "meta",
]

search_space = {
    "tp": tune.choice([1, 2, 4, 8]),
    "pp": tune.choice([1, 2, 4, 8, 16]),
    "pp_schedule": tune.choice(["1f1b", "interleaved"]),
    "dp_mode": tune.choice(["ddp", "fsdp"]),
    "micro_batch": tune.choice([1, 2, 4, 8]),
    "checkpoint": tune.choice(["none", "nonreentrant"]),
}

# The 80 blocks are identical: emulate two shallow copies (3 and 4 blocks per pipeline stage; all 80
# when 7 per stage are not fewer) and extrapolate to 80 (maya/tune/depth_extrapolation.py). Every
# stage needs whole blocks, two stages per rank with the interleaved schedule.
depth_flag = "--layers"


def depth_unit(config):
    return config["pp"] * (2 if config["pp"] > 1 and config["pp_schedule"] == "interleaved" else 1)


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
    """train_gpt.py's rules: whole heads per tensor-parallel rank, whole layers per pipeline stage (two
    stages per rank when interleaved), enough micro-batches for the pipeline, DTensor needs FSDP."""
    tp, pp, accum = config["tp"], config["pp"], config["accum"]
    interleaved = pp > 1 and config["pp_schedule"] == "interleaved"
    stages = pp * (2 if interleaved else 1)
    if HEADS % tp:
        return f"{HEADS} heads do not split over tp={tp}"
    if LAYERS % stages:
        return f"{LAYERS} layers do not split into {stages} pipeline stages"
    if pp > 1 and accum < pp:
        return f"accum={accum} micro-batches cannot fill pp={pp} stages"
    if interleaved and accum % pp:
        return f"the interleaved schedule needs accum={accum} to be a multiple of pp={pp}"
    if tp > 1 and config["dp_mode"] == "ddp":
        return "DDP cannot hold tensor-parallel parameters (train_gpt.py needs --dp fsdp with --tp > 1)"
    return None


# Checkpointing never needs more memory than keeping every activation: a configuration needing at least
# the memory of one found over memory is reported infeasible without emulating it (maya/tune/memory_dominance.py).
memory_order = {"checkpoint": ["nonreentrant", "none"]}

objective = "cost"
search = "hyperopt"
num_samples = 1000
seed = 0
top_k = 10
name = "llama70b-h100"
