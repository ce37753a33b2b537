"""A two-configuration study of tests/tune/scripts/tiny_train.py, for the `ray job submit` test."""

from ray import tune

script = "../scripts/tiny_train.py"
script_args = ["--steps", "2", "--dim", "32"]
search_space = {"micro_batch": tune.choice([2, 4])}
global_batch = 8
train_steps = 1000
clusters = [{"preset": "dgx-h200", "gpus_per_node": 1}]
search = "grid"
