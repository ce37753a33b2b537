"""Tuner test helpers: the tiny training script and studies over it."""

from __future__ import annotations

from pathlib import Path

import pytest

from maya.tune.study import ClusterCandidate, Study

TINY_SCRIPT = Path(__file__).parent / "scripts" / "tiny_train.py"
ROOT = Path(__file__).parents[2]


def tiny_study(**fields) -> Study:
    """A one-GPU study of tests/tune/scripts/tiny_train.py (global batch 8), fields overridable."""
    from ray import tune

    defaults = dict(
        script=TINY_SCRIPT,
        script_args=("--steps", "2", "--dim", "64"),
        search_space={"micro_batch": tune.choice([2, 4, 8])},
        global_batch=8,
        train_steps=3600,
        clusters=(ClusterCandidate(preset="dgx-h200", gpus_per_node=1, price_per_gpu_hour_usd=2.0),),
        search="grid",
    )
    return Study(**{**defaults, **fields})


@pytest.fixture
def make_study():
    """`tiny_study` as a fixture (test modules here are not a package, so they cannot import it)."""
    return tiny_study
