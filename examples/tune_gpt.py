"""Tune config: the cheapest way to train GPT-2 small (examples/train_gpt.py) on one H200.

Fixed work: 2B tokens at a global batch of 64 sequences of 1,024 tokens. Searched: the micro-batch
(gradient accumulation makes up the rest of the global batch), activation checkpointing and the
precision; 12 configurations, every one emulated (under a minute on 2 CPU cores):

    maya tune examples/tune_gpt.py

This is also the study whose ranking is checked against real H200 measurements
(benchmarks/tune_quality/). The config is plain Python; see maya/tune/config_file.py for every field.
"""

from ray import tune

script = "train_gpt.py"
# Each configuration runs 2 optimizer steps under emulation; the second is the steady-state step.
script_args = ["--steps", "2", "--seq", "1024", "--dim", "768", "--layers", "12", "--heads", "12", "--vocab", "50304"]

search_space = {
    "micro_batch": tune.choice([16, 32, 64]),
    "checkpoint": tune.choice(["none", "nonreentrant"]),
    "precision": tune.choice(["bf16", "fp32"]),
}

# Checkpointing never needs more memory than keeping every activation: a configuration needing at least
# the memory of one found over memory is reported infeasible without emulating it (maya/tune/memory_dominance.py).
memory_order = {"checkpoint": ["nonreentrant", "none"]}

global_batch = 64
train_tokens = 2_000_000_000
tokens_per_sample = 1024

# One GPU of an H200 node, at the catalog's on-demand price.
clusters = [{"preset": "dgx-h200", "gpus_per_node": 1, "nodes": [1]}]

objective = "cost"
search = "grid"
top_k = 5
name = "gpt2-small-h200"
