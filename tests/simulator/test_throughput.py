"""Throughput and MFU: hand-computed figures for the pure functions of `maya.throughput`."""

import pandas as pd
import pytest

from maya.hardware import load_gpu
from maya.throughput import model_flops_per_iteration, throughput


def test_throughput_and_mfu_by_hand():
    h200 = load_gpu("h200")  # dense bf16 peak: 989.4 TFLOP/s (NVIDIA H200 datasheet)
    rate = throughput(iteration_time_ms=10.0, world_size=2, gpu=h200, model_flops_per_iteration=4e12,
                      samples_per_iteration=32, tokens_per_iteration=32 * 1024)
    assert rate.iterations_per_s == pytest.approx(100.0)
    assert rate.samples_per_s == pytest.approx(3200.0)
    assert rate.tokens_per_s == pytest.approx(3_276_800.0)
    assert rate.peak_flops_per_s == pytest.approx(989.4e12)
    # 4e12 FLOP / (0.010 s * 2 GPUs * 989.4e12 FLOP/s) = 0.20214...
    assert rate.mfu == pytest.approx(4e12 / (0.010 * 2 * 989.4e12))
    assert rate.mfu == pytest.approx(0.202143, rel=1e-5)


def test_unknown_figures_stay_none_and_bad_inputs_are_refused():
    a100 = load_gpu("a100")
    rate = throughput(iteration_time_ms=250.0, world_size=1, gpu=a100)
    assert (rate.samples_per_s, rate.tokens_per_s, rate.mfu) == (None, None, None)
    assert rate.iterations_per_s == pytest.approx(4.0) and rate.peak_flops_per_s == pytest.approx(312e12)
    with pytest.raises(ValueError, match="iteration_time_ms=0.0 must be > 0"):
        throughput(iteration_time_ms=0.0, world_size=1, gpu=a100)
    with pytest.raises(ValueError, match="world_size=0 must be >= 1"):
        throughput(iteration_time_ms=1.0, world_size=0, gpu=a100)
    with pytest.raises(ValueError, match="samples_per_iteration=-1 must be >= 0"):
        throughput(iteration_time_ms=1.0, world_size=1, gpu=a100, samples_per_iteration=-1)


def test_model_flops_weight_representatives_by_class_size():
    rep0 = pd.DataFrame({
        "kind": ["kernel", "kernel", "memcpy", "iteration_end", "kernel", "iteration_end", "kernel"],
        "iteration": [0, 0, 0, 0, 1, 1, 2],
        "flops": [10.0, 20.0, 5.0, 0.0, 30.0, 0.0, 1000.0],
    })
    rep3 = pd.DataFrame({"kind": ["kernel", "iteration_end", "iteration_end"], "iteration": [0, 0, 1],
                         "flops": [7.0, 0.0, 0.0]})
    representative = {0: 0, 1: 0, 2: 0, 3: 3}
    # Ranks 0-2 share rank 0's trace: 3 * (10 + 20) + 7 and 3 * 30; memcpy and iteration 2 do not count.
    assert model_flops_per_iteration({0: rep0, 3: rep3}, 2, representative) == [97.0, 90.0]
    assert model_flops_per_iteration({0: rep0}, 1) == [30.0]
