"""Trace-cache keys: what changes a per-rank trace changes the key, what only the simulator models does not."""

from dataclasses import replace
from pathlib import Path

from maya.hardware.cluster import load_cluster
from maya.tune.trace_cache import (
    EMULATION_CODE,
    PREDICTION_CODE,
    SINGLE_GPU_SIM_KEY,
    TraceCache,
    code_fingerprint,
    emulation_inputs,
    emulation_key,
    simulation_key,
)


def _key(**changes):
    inputs = dict(script_sha256="ab" * 32, argv=("--batch", "4"), gpu="h100", tp=8, pp=2, dp=4, dp_mode="ddp")
    return emulation_key(emulation_inputs(**{**inputs, **changes}))


def test_ddp_degree_is_left_to_the_simulator_but_fsdp_degree_is_not():
    assert _key(dp=4) == _key(dp=16)
    assert _key(dp_mode="fsdp", dp=4) != _key(dp_mode="fsdp", dp=16)
    # A study that does not say: the script may shard (train_gpt.py does with tp > 1).
    assert _key(dp_mode=None, dp=4) != _key(dp_mode=None, dp=16)


def test_script_argv_gpu_and_layout_change_the_key():
    base = _key()
    for changed in (_key(script_sha256="cd" * 32), _key(argv=("--batch", "8")), _key(gpu="h200"), _key(tp=4), _key(pp=4)):
        assert changed != base


def test_allocator_settings_change_the_key(monkeypatch):
    # expandable_segments changes reserved memory and so whether a configuration fits.
    monkeypatch.delenv("PYTORCH_ALLOC_CONF", raising=False)
    monkeypatch.delenv("PYTORCH_CUDA_ALLOC_CONF", raising=False)
    base = _key()
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    assert _key() != base


def test_simulation_key_ignores_name_and_price_but_not_topology():
    spec = load_cluster("dgx-h100", nodes=4)
    assert simulation_key(spec) == simulation_key(replace(spec, name="reserved", price_per_gpu_hour_usd=1.0))
    assert simulation_key(spec) != simulation_key(replace(spec, nodes=8))
    assert simulation_key(spec) != simulation_key(replace(spec, nic_bandwidth_bytes_per_s=25e9))
    one = replace(load_cluster("dgx-h200"), gpus_per_node=1, nvlink_domain_size=1)
    assert simulation_key(one) == f"{SINGLE_GPU_SIM_KEY}-code-{code_fingerprint(PREDICTION_CODE)[:12]}"


def test_keys_carry_the_code_that_makes_their_entries(tmp_path):
    # A cache written by another Maya (its models refitted, its transfer rule changed) must not be
    # read back as if this Maya had made it.
    import shutil

    import maya

    package = Path(maya.__file__).parent
    copy = tmp_path / "maya"
    shutil.copytree(package / "hardware", copy / "hardware")
    (copy / "estimator" / "data" / "h200" / "models").mkdir(parents=True)
    shutil.copy(package / "predict.py", copy / "predict.py")
    parts = ("hardware", "estimator", "predict.py")
    first = code_fingerprint(parts, copy)
    assert code_fingerprint(parts, copy) == first and len(first) == 16
    code_fingerprint.cache_clear()
    (copy / "estimator" / "data" / "h200" / "profile.parquet").write_bytes(b"rows")  # profiles are not read
    (copy / "hardware" / "__pycache__").mkdir(exist_ok=True)
    (copy / "hardware" / "__pycache__" / "x.pyc").write_bytes(b"bytecode")
    assert code_fingerprint(parts, copy) == first
    code_fingerprint.cache_clear()
    (copy / "estimator" / "data" / "h200" / "models" / "fit_report.json").write_text("{}")  # a refit
    refit = code_fingerprint(parts, copy)
    assert refit != first
    code_fingerprint.cache_clear()
    gpu = copy / "hardware" / "gpus" / "h100.yaml"
    gpu.write_text(gpu.read_text().replace("memory_bandwidth_GBps: 3350", "memory_bandwidth_GBps: 3000"))
    assert code_fingerprint(parts, copy) not in (first, refit)
    code_fingerprint.cache_clear()
    # the installed package's: the emulation key has the emulator's, the simulation key the predictor's
    inputs = dict(script_sha256="ab" * 32, argv=(), gpu="h100", tp=1, pp=1, dp=1, dp_mode=None)
    assert emulation_inputs(**inputs)["emulator_code"] == code_fingerprint(EMULATION_CODE)
    assert code_fingerprint(EMULATION_CODE) != code_fingerprint(PREDICTION_CODE)


def test_entries_round_trip_and_trace_dirs(tmp_path):
    cache = TraceCache(tmp_path)
    assert cache.read_figures("k", "s") is None and cache.read_outcome("k") is None
    cache.write_figures("k", "s", {"step_time_ms": 1.5}, {"argv": []})
    assert cache.read_figures("k", "s") == {"step_time_ms": 1.5}
    assert (tmp_path / "k" / "inputs.json").exists()
    first = cache.new_trace_dir("k", "s")
    assert first == tmp_path / "k" / "trace" and cache.trace_dir("k") is None
    first.mkdir()
    (first / "meta.json").write_text("{}")
    assert cache.trace_dir("k") == first
    assert cache.new_trace_dir("k", "s2") == tmp_path / "k" / "sims" / "s2.trace"
