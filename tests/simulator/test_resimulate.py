"""`maya.simulate_trace_dir`: re-timing a real `maya.emulate` trace on the same and on other clusters."""

import json
import logging
import shutil

import pytest

import maya
from maya.trace import IncompleteTraceError, read_meta, write_meta

CONTRACT_KEYS = {"world_size", "gpu", "emulated_ranks", "iterations", "median_iteration_ms",
                 "peak_allocated_bytes", "peak_reserved_bytes", "oom", "trace_dir"}


def _copy_with_meta(trace_dir, tmp_path, **meta):
    """A copy of the trace directory whose meta.json has `meta`'s keys replaced."""
    copy = tmp_path / "copy"
    shutil.copytree(trace_dir / "rank=0", copy / "rank=0")
    original = read_meta(trace_dir)
    del original["trace_schema_version"]
    write_meta(copy, {**original, **meta})
    return copy


def test_same_gpu_reproduces_the_emulated_summary(gpt_run, tmp_path):
    emulated, trace_dir = gpt_run
    s = maya.simulate_trace_dir(trace_dir, timeline_path=tmp_path / "t.json")
    assert s.gpu == "h200" and s.world_size == 1 and s.emulated_ranks == [0]
    assert [it.time_ms for it in s.iterations] == pytest.approx([it.time_ms for it in emulated.iterations])
    # Peaks, op counts and FLOPs re-read from the trace equal what the emulator reported.
    for mine, theirs in zip(s.iterations, emulated.iterations, strict=True):
        assert (mine.index, mine.peak_allocated_bytes, mine.peak_reserved_bytes, mine.ops) == (
            theirs.index, theirs.peak_allocated_bytes, theirs.peak_reserved_bytes, theirs.ops)
        assert mine.flops == pytest.approx(theirs.flops)
    d = json.loads(json.dumps(s.to_dict()))
    assert CONTRACT_KEYS <= set(d) and d["oom"] is False and d["emulated_gpu"] == "h200"
    assert d["cluster"]["name"] == "dgx-h200" and d["timeline"] == str(tmp_path / "t.json")
    assert d["mfu"] == pytest.approx(emulated.to_dict()["mfu"])
    # A training step's GPU time in its phases' order (the optimizer's foreach kernels included).
    assert list(d["gpu_ms_by_phase"])[:3] == ["forward", "backward", "optimizer"]
    assert d["gpu_ms_by_phase"]["backward"] > d["gpu_ms_by_phase"]["forward"] > d["gpu_ms_by_phase"]["optimizer"] > 0
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]


def test_other_cluster_gpu_warns_that_memory_is_the_emulated_gpus(gpt_run, caplog):
    emulated, trace_dir = gpt_run
    with caplog.at_level(logging.WARNING, logger="maya.resimulate"):
        s = maya.simulate_trace_dir(trace_dir, cluster="dgx-a100", samples_per_iteration=2, tokens_per_iteration=128)
    assert "emulated on h200 and is predicted for a100" in caplog.text
    assert s.gpu == "a100" and s.extra["emulated_gpu"] == "h200"
    assert s.peak_allocated_bytes == emulated.peak_allocated_bytes
    assert s.extra["timeline"] == str(trace_dir / "timeline-dgx-a100.json")
    assert (trace_dir / "timeline-dgx-a100.json").exists()
    d = s.to_dict()
    assert d["memory_capacity_bytes"] == 80 * 2**30
    assert d["samples_per_s"] == pytest.approx(2 * 1000.0 / d["median_iteration_ms"])
    assert d["tokens_per_s"] == pytest.approx(128 * 1000.0 / d["median_iteration_ms"])
    # An A100 computes slower than an H200: more GPU time in the same ops.
    assert d["breakdown_ms"]["compute_ms"] > emulated.to_dict()["breakdown_ms"]["compute_ms"]


def test_rank_to_representative_from_meta(gpt_run, tmp_path):
    emulated, trace_dir = gpt_run
    copy = _copy_with_meta(trace_dir, tmp_path, world_size=2, rank_to_representative={"0": 0, "1": 0})
    s = maya.simulate_trace_dir(copy, cluster="hgx-h200")
    d = s.to_dict()
    assert d["world_size"] == 2 and d["rank_breakdowns_ms"][0]["members"] == 2
    one_rank = emulated.to_dict()["model_flops_per_iteration"]
    assert d["model_flops_per_iteration"] == pytest.approx(2 * one_rank)


def test_bad_trace_dirs_and_clusters_fail_naming_the_problem(gpt_run, tmp_path):
    trace_dir = gpt_run[1]
    with pytest.raises(IncompleteTraceError, match="meta.json is missing"):
        maya.simulate_trace_dir(tmp_path)
    copy = _copy_with_meta(trace_dir, tmp_path, world_size=2)
    with pytest.raises(ValueError, match=r"world_size=2 but emulated_ranks=\[0\] and no rank_to_representative"):
        maya.simulate_trace_dir(copy)
    with pytest.raises(ValueError, match="gpu='a100' conflicts with cluster 'dgx-h100', whose gpu='h100'"):
        maya.simulate_trace_dir(trace_dir, cluster="dgx-h100", gpu="a100")
    spec = tmp_path / "two.yaml"
    spec.write_text("gpu: h100\nnodes: 1\ngpus_per_node: 1\nnics_per_node: 1\nnic_bandwidth_Gbps: 400\n")
    copy2 = _copy_with_meta(trace_dir, tmp_path / "b", world_size=2, rank_to_representative={"0": 0, "1": 0})
    with pytest.raises(ValueError, match=r"world_size=2 > nodes=1 \* gpus_per_node=1 = 1 GPUs of cluster 'two'"):
        maya.simulate_trace_dir(copy2, cluster=spec)


def test_exact_table_from_maya_profile_trace_takes_precedence(gpt_run, tmp_path):
    """`maya profile --trace` times the trace's own signatures; `maya simulate --exact` uses those times."""
    from maya.estimator.profiler import run_profile

    _, trace_dir = gpt_run
    profiled = run_profile(tmp_path / "exact", device="cpu", quick=True, trace_dir=trace_dir)
    default = maya.simulate_trace_dir(trace_dir, timeline_path=tmp_path / "a.json")
    measured = maya.simulate_trace_dir(trace_dir, timeline_path=tmp_path / "b.json", exact=profiled)
    shares = measured.extra["estimate_sources"]
    assert shares.get("exact", 0.0) > 0.9, shares  # nearly every kernel was timed (the rest: memcpy, failures)
    assert default.extra["estimate_sources"].get("exact", 0.0) < shares["exact"]
    # The CPU runs an op far slower than the H200 models predict: the exact times decided the GPU time
    # (the step of this tiny model may stay host-bound, so compare the GPU's busy time, not the step).
    gpu_ms = lambda s: s.extra["breakdown_ms"]["compute_ms"]  # noqa: E731
    assert gpu_ms(measured) > 1.5 * gpu_ms(default), (gpu_ms(measured), gpu_ms(default))
    file_form = maya.simulate_trace_dir(trace_dir, timeline_path=tmp_path / "c.json", exact=profiled / "exact.parquet")
    assert file_form.median_iteration_ms == pytest.approx(measured.median_iteration_ms)


def test_missing_exact_table_is_named(gpt_run, tmp_path):
    _, trace_dir = gpt_run
    with pytest.raises(FileNotFoundError, match="maya profile --trace"):
        maya.simulate_trace_dir(trace_dir, exact=tmp_path / "nowhere")


def test_host_profile_of_the_users_machine_replaces_the_shipped_host_figures(gpt_run, tmp_path, slow_host_profile):
    """`maya simulate --host-profile`: the output of `maya profile --families host` on the machine the
    job will run on prices every op's host time; a host three times slower gives a longer step."""
    from maya.estimator.host_cost import read_host_profile

    _, trace_dir = gpt_run
    profile = slow_host_profile
    slower = read_host_profile(profile)
    default = maya.simulate_trace_dir(trace_dir, timeline_path=tmp_path / "a.json")
    slow = maya.simulate_trace_dir(trace_dir, timeline_path=tmp_path / "b.json", host_profile=profile)
    # The steady (second) iteration: the first also pays cuDNN's and cuBLAS's first-shape costs, which are
    # not per-op host figures and would dilute the ratio (and a two-step median is their mean).
    assert slow.iterations[-1].time_ms > 1.2 * default.iterations[-1].time_ms
    same = maya.simulate_trace_dir(trace_dir, timeline_path=tmp_path / "c.json",
                                   host_profile=profile / "host_overhead.json")
    assert same.median_iteration_ms == pytest.approx(slow.median_iteration_ms)
    # The figures already read (how the tuner passes them to its trials) do the same.
    read = maya.simulate_trace_dir(trace_dir, timeline_path=tmp_path / "d.json", host_profile=slower)
    assert read.median_iteration_ms == pytest.approx(slow.median_iteration_ms)
    with pytest.raises(ValueError, match="aten_op_us"):
        maya.simulate_trace_dir(trace_dir, timeline_path=tmp_path / "e.json", host_profile={**slower, "aten_op_us": -1})


@pytest.mark.parametrize("content, match", [
    (None, "not found"),
    ("not json", "not a `maya profile --families host` JSON"),
    ('{"iterations": 5}', "no per_op_us"),
    ('{"per_op_us": {"aten_op_us": -1.0, "synchronize_us": "fast"}}', "aten_op_us, synchronize_us"),
])
def test_bad_host_profiles_are_named(gpt_run, tmp_path, content, match):
    _, trace_dir = gpt_run
    path = tmp_path / "host_overhead.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises((FileNotFoundError, ValueError), match=match):
        maya.simulate_trace_dir(trace_dir, host_profile=path)
