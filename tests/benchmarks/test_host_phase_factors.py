"""benchmarks/host_phase_factors.py: a lease directory in either layout gives its profiles and probes."""

import gzip
import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
_spec = importlib.util.spec_from_file_location("host_phase_factors", ROOT / "benchmarks" / "host_phase_factors.py")
factors = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(factors)


def _profile(path: Path, backward: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"per_op_us": {"aten_op_us": 7.0, "autograd_backward_op_us": backward,
                                              "conv_forward_extra_us": 99.0}}))


@pytest.mark.parametrize("layout", ["host_phase_h200", "device_call"])
def test_lease_profiles_are_averaged_and_probes_found_in_either_layout(tmp_path, layout):
    if layout == "host_phase_h200":  # benchmarks/gpu/host_phase_h200/<lease>/
        _profile(tmp_path / "host_overhead_run1.json", 20.0)
        _profile(tmp_path / "host_overhead_run2.json", 30.0)
        (tmp_path / "mlp_tiny_adamw.json.gz").write_bytes(b"")
    else:  # a device call's output: host*/host_overhead.json and host_phase/NAME.json.gz
        _profile(tmp_path / "host" / "host_overhead.json", 20.0)
        _profile(tmp_path / "host_after" / "host_overhead.json", 30.0)
        (tmp_path / "host_phase").mkdir()
        (tmp_path / "host_phase" / "mlp_tiny_adamw.json.gz").write_bytes(b"")
    figures = factors.lease_figures(tmp_path)
    # The two runs' mean; the CNN-layer extras are the shipped in-situ ones, not the lease's.
    assert figures == {"aten_op_us": 7.0, "autograd_backward_op_us": 25.0}
    assert {n: p.name for n, p in factors.probe_files(tmp_path).items()} == {"mlp_tiny_adamw": "mlp_tiny_adamw.json.gz"}


def test_the_model_takes_the_shipped_cnn_extras_at_the_lease_speed_as_host_profile_does(tmp_path):
    from maya.estimator.host_cost import IN_SITU_EXTRAS, host_overhead, read_host_profile

    _profile(tmp_path / "host_overhead.json", 20.0)
    figures = factors.model_figures(tmp_path)
    speed = 7.0 / host_overhead()["aten_op_us"]
    assert speed != pytest.approx(1.0)
    for key in IN_SITU_EXTRAS:  # not the lease's tiny-layer reading (99 us), nor the shipped figure unscaled
        assert figures[key] == pytest.approx(host_overhead()[key] * speed)
    assert figures == pytest.approx(read_host_profile(tmp_path / "host_overhead.json"))


def test_write_is_refused_with_another_lease(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["host_phase_factors.py", "--write", "--lease", str(tmp_path)])
    with pytest.raises(SystemExit):
        factors.main()
    assert "not with --lease" in capsys.readouterr().err


def test_kernel_busy_comes_from_the_h200_profiles_else_the_leases_own_else_none(tmp_path):
    (tmp_path / "op_times").mkdir()
    (tmp_path / "op_times" / "hf_qwen2_0p5b_bf16.json").write_text(json.dumps({"kernel_busy_ms": 69.3}))
    (tmp_path / "op_times" / "gpt2_124m_bf16.json").write_text(json.dumps({"kernel_busy_ms": 1.0}))
    assert factors.kernel_busy_ms("hf_qwen2_0p5b_bf16", tmp_path) == 69.3
    h200 = json.loads((factors.OP_TIMES / "gpt2_124m_bf16.json").read_text())["kernel_busy_ms"]
    assert factors.kernel_busy_ms("gpt2_124m_bf16", tmp_path) == h200 != 1.0
    assert factors.kernel_busy_ms("unet_fp32_128px", tmp_path / "elsewhere") is None


def test_out_is_written_when_no_step_is_host_bound(tmp_path, monkeypatch):
    # lstm_lm_fp32's H200 profile is GPU-bound, so no factor is fitted; the table is still written.
    lease = tmp_path / "lease_z"
    _profile(lease / "host_overhead.json", 20.0)
    steps = [{"forward_ms": 10.0, "backward_ms": 20.0, "optimizer_ms": 1.0, "host_step_ms": 32.0}] * 3
    probe = {"steps": steps, "cuda_event_step_ms": [46.0, 46.0, 46.0]}
    (lease / "lstm_lm_fp32.json.gz").write_bytes(gzip.compress(json.dumps(probe).encode()))
    out = tmp_path / "table.md"
    monkeypatch.setattr(sys, "argv", ["host_phase_factors.py", "--lease", str(lease), "--out", str(out)])
    factors.main()
    text = out.read_text()
    assert "| lease_z | lstm_lm_fp32 | 46.00 | no | 10.00 / " in text
    assert "no host-bound calibration step to fit it on" in text
