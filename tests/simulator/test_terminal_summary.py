"""The one-page terminal summary and the summary JSON's throughput/MFU keys, on hand-made summaries."""

import pytest

from maya.summary import EmulationSummary, IterationSummary
from maya.terminal_summary import terminal_summary

GIB = 1 << 30


def _iteration(index, time_ms, flops=1e12, allocated=10 * GIB, reserved=12 * GIB):
    return IterationSummary(index=index, time_ms=time_ms, peak_allocated_bytes=allocated,
                            peak_reserved_bytes=reserved, ops=100, flops=flops)


def _extra(**overrides):
    extra = {
        "estimate_sources": {"exact": 0.75, "catboost": 0.25, "none": 0.0},
        "breakdown_ms": {"compute_ms": 60.0, "exposed_comm_ms": 20.0, "host_bound_ms": 10.0, "idle_ms": 10.0},
        "slowest_rank": 1,
        "rank_breakdowns_ms": [
            {"rank": 0, "members": 4, "total_ms": 100.0, "compute_ms": 50.0, "exposed_comm_ms": 20.0,
             "host_bound_ms": 5.0, "idle_ms": 25.0, "comm_ms": 40.0},
            {"rank": 1, "members": 4, "total_ms": 100.0, "compute_ms": 60.0, "exposed_comm_ms": 20.0,
             "host_bound_ms": 10.0, "idle_ms": 10.0, "comm_ms": 40.0},
        ],
        "top_ops": [{"op": f"op{i}", "kind": "memcpy" if i == 1 else "kernel", "gpu_ms": 10.0 - i,
                     "share": (10.0 - i) / 100} for i in range(10)],
        # The first a model's repeated layers summed; the others as a summary from before `instances`.
        "top_modules": [{"module": "layers.*.mlp", "instances": 12, "gpu_ms": 6.0, "share": 0.06},
                        {"module": "<top>", "instances": 1, "gpu_ms": 5.5, "share": 0.055}]
                       + [{"module": f"layers.{i}", "gpu_ms": 5.0, "share": 0.05} for i in range(10)],
        "gpu_ms_by_phase": {"forward": 20.0, "backward": 35.0, "optimizer": 5.0},
        "model_flops_per_iteration": 8 * 0.5e12,
        "cluster": {"name": "dgx-h200", "gpu": "h200", "nodes": 1, "gpus_per_node": 8, "price_per_gpu_hour_usd": 3.5},
        "timeline": "/runs/t/timeline.json",
    }
    return {**extra, **overrides}


def _summary(**kw):
    base = dict(world_size=8, gpu="h200", emulated_ranks=[0, 1], iterations=[_iteration(0, 80.0), _iteration(1, 40.0),
                _iteration(2, 40.0)], oom=False, trace_dir="/runs/t", extra=_extra())
    return EmulationSummary(**{**base, **kw})


def test_json_carries_throughput_and_mfu_by_hand():
    d = _summary(samples_per_iteration=64, tokens_per_iteration=64 * 2048).to_dict()
    assert d["median_iteration_ms"] == 40.0
    assert d["iterations_per_s"] == pytest.approx(25.0)
    assert d["samples_per_s"] == pytest.approx(64 * 25.0)
    assert d["tokens_per_s"] == pytest.approx(64 * 2048 * 25.0)
    # 4e12 FLOP per iteration over 8 GPUs in 40 ms at 989.4 TFLOP/s each: 4e12 / (0.04 * 8 * 989.4e12).
    assert d["mfu"] == pytest.approx(4e12 / (0.04 * 8 * 989.4e12))
    assert d["mfu_peak_flops_per_s"] == pytest.approx(989.4e12)
    assert d["memory_capacity_bytes"] == 150109880320


def test_mfu_needs_model_flops_of_every_rank():
    multi = _summary(extra=_extra(model_flops_per_iteration=None)).to_dict()
    assert multi["mfu"] is None and multi["samples_per_s"] is None
    # One rank: its own iteration FLOPs are the model's (median over timed iterations).
    one = _summary(world_size=1, emulated_ranks=[0], extra={}).to_dict()
    assert one["model_flops_per_iteration"] == 1e12
    assert one["mfu"] == pytest.approx(1e12 / (0.04 * 989.4e12))
    failed = _summary(iterations=[_iteration(0, None)], exit_code=1, extra={}).to_dict()
    assert failed["mfu"] is None and failed["iterations_per_s"] is None


def test_terminal_summary_one_page():
    text = terminal_summary(_summary(samples_per_iteration=64))
    lines = text.splitlines()
    assert len(lines) <= 40
    assert lines[0] == "Maya prediction: 8 x NVIDIA H200 (cluster dgx-h200: 1 node x 8 GPUs), emulated ranks [0, 1]"
    assert "40.00 ms, median of 3 iteration(s): 80.00, 40.00, 40.00 ms" in text
    assert "25.00 iterations/s, 1,600.0 samples/s, tokens/s n/a" in text
    assert "MFU            1.26% (4.00 TFLOP per iteration on 8 GPU(s) of 989.4 TFLOP/s dense bfloat16 peak)" in text
    assert "peak allocated 10.00 GiB, reserved 12.00 GiB of 139.80 GiB per GPU (h200): fits" in text
    # The figures are the slowest rank's (rank 1); where another class holds more, the page says so.
    per_rank = {"0": 11 * GIB, "1": 10 * GIB}
    higher = terminal_summary(_summary(extra=_extra(peak_allocated_bytes_per_representative=per_rank)))
    assert ("peak allocated 10.00 GiB, reserved 12.00 GiB of 139.80 GiB per GPU (h200) on the slowest rank (1); "
            "rank 0's class peaks higher, at 11.00 GiB allocated: fits") in higher
    per_rank = {"0": 9 * GIB, "1": 10 * GIB}
    lower = terminal_summary(_summary(extra=_extra(peak_allocated_bytes_per_representative=per_rank)))
    assert "per GPU (h200): fits" in lower and "peaks higher" not in lower
    # The breakdown per iteration: the JSON's sums over the 3 iterations, divided by 3.
    assert "rank 1 (slowest), per iteration (mean of all iterations): 33.33 ms" in text
    assert ("compute 20.00 ms (60%), exposed comm 6.67 ms (20%), host-bound 3.33 ms (10%), "
            "idle/bubble 3.33 ms (10%)") in text
    assert "rank 0 (x4): 33.33 ms; compute 16.67 ms (50%)" in text
    assert " op0\n" in text and " op1 (memcpy)\n" in text
    assert "op4" in text and "op5" not in text  # top 5 of 10
    assert " layers.*.mlp (12 modules)\n" in text and " layers.0\n" in text
    assert " <top> (in no submodule: the loss, the optimizer, the model's own forward code)\n" in text
    assert "layers.2" in text and "layers.3" not in text
    assert "exact 75%, catboost 25% of predicted GPU time" in text
    # GPU times per GPU and iteration: the sums over 8 GPUs and 3 iterations, divided by 24.
    assert "GPU by phase   forward 0.83 ms (33%), backward 1.46 ms (58%), optimizer 0.21 ms (8%)\n" in text
    assert "top ops         10.0%      0.417 ms  op0\n" in text
    assert "top modules      6.0%      0.250 ms  layers.*.mlp (12 modules)\n" in text
    assert "/runs/t/timeline.json (open it in https://ui.perfetto.dev)" in text
    assert "(GPU time per GPU and iteration, the mean over all ranks and iterations)" in text
    steady = terminal_summary(_summary(extra=_extra(from_iteration=1)))
    assert "rank 1 (slowest), per iteration (mean of the iterations after the first): 50.00 ms" in steady
    assert "GPU by phase   forward 1.25 ms (33%)" in steady  # 20 ms over 8 GPUs and 2 iterations
    assert "host-bound: the host's CPU" not in text  # 10% host-bound
    host_bound = {"compute_ms": 60.0, "exposed_comm_ms": 0.0, "host_bound_ms": 30.0, "idle_ms": 10.0}
    assert "host-bound: the host's CPU sets part of this step; on real H200 machines" in terminal_summary(
        _summary(extra=_extra(breakdown_ms=host_bound)))
    assert ("host-bound: the host's CPU sets part of this step: 31.50 ms on a fast host, 48.75 ms on a slow one "
            "(the 10th and 90th percentiles of the H200 machines measured)") in terminal_summary(
        _summary(extra=_extra(breakdown_ms=host_bound, host_speed_range_ms=[31.5, 48.75])))
    assert ("(GPU time per GPU and iteration, the mean over all ranks and the iterations after the first, which "
            "holds the set-up; estimates too)") in steady


def test_terminal_summary_out_of_memory_and_other_gpu():
    oom = terminal_summary(_summary(iterations=[_iteration(0, None)], oom=True, exit_code=1, extra={}))
    assert "step time      n/a (the script ran out of memory)" in oom
    assert "OUT OF MEMORY" in oom and "MFU" not in oom and "timeline" not in oom
    unnamed = terminal_summary(_summary(extra=_extra(slowest_rank=None, rank_breakdowns_ms=[])))
    assert "breakdown      slowest rank, per iteration (mean of all iterations): 33.33 ms" in unnamed
    a100 = terminal_summary(_summary(gpu="a100", iterations=[_iteration(0, 40.0, reserved=90 * GIB)],
                                     extra=_extra(emulated_gpu="h200")))
    assert "of 80.00 GiB per GPU (a100): does NOT fit in the a100's memory; figures from the emulated h200's allocator" in a100
    assert "lower confidence" not in a100  # its estimates came from an H200's models unscaled (here)
    h100 = terminal_summary(_summary(gpu="h100", extra=_extra(
        estimate_sources={"catboost-transfer": 0.9, "exact-transfer": 0.05, "roofline": 0.05})))
    assert "catboost-transfer 90%, exact-transfer 5%, roofline 5% of predicted GPU time" in h100
    assert "lower confidence: 95% scaled from the H200's models by catalog ratios (no profiles of this GPU" in h100


def test_a_step_of_no_gpu_work_has_no_rate_and_the_page_still_prints():
    # A script whose only step ran host code (a data split, a DataLoader) has a 0.00 ms step; the
    # page had crashed on the missing throughput.
    page = terminal_summary(_summary(world_size=1, emulated_ranks=[0], iterations=[_iteration(0, 0.0, flops=0.0)]))
    assert "step time      0.00 ms, median of 1 iteration(s)" in page
    assert "throughput     n/a (the step ran no GPU work)" in page


def test_two_iterations_with_set_up_get_a_hint_three_do_not():
    two = terminal_summary(_summary(iterations=[_iteration(0, 80.0), _iteration(1, 40.0)]))
    assert "60.00 ms, median of 2 iteration(s): 80.00, 40.00 ms" in two
    assert "run 3 or more steps for a steady-state median (the second alone: 40.00 ms)" in two
    three = terminal_summary(_summary())
    assert "steady-state median" not in three
    even = terminal_summary(_summary(iterations=[_iteration(0, 41.0), _iteration(1, 40.0)]))
    assert "steady-state median" not in even
