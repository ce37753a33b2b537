"""benchmarks/host_lease_means.py: borrowed host figures are the scaled mean over the leases that measured them."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "host_lease_means.py"
_spec = importlib.util.spec_from_file_location("benchmarks_host_lease_means", PATH)
means = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = means
_spec.loader.exec_module(means)

KEYS = ("conv_forward_extra_us", "conv_backward_extra_us")


def test_each_lease_is_scaled_to_the_shipped_host_speed_before_the_mean():
    shipped = {"autograd_backward_op_us": 30.0}
    fast = {"autograd_backward_op_us": 30.0, **dict.fromkeys(KEYS, 20.0)}
    slow = {"autograd_backward_op_us": 60.0, **dict.fromkeys(KEYS, 100.0)}  # 50 at the shipped speed
    assert means.mean_figures(shipped, [fast, slow], KEYS) == dict.fromkeys(KEYS, 35.0)


def test_the_note_on_a_group_is_replaced_and_the_other_sentences_kept():
    notes = f"First figure from a run (factor 0.713). {means.names(KEYS)} come from one old lease: factor 1.082. Last one."
    sources = (means.GPU / "a.json", means.GPU / "b.json")
    out = means.with_note(notes, KEYS, dict.fromkeys(KEYS, 1.5), sources)
    assert out.startswith("First figure from a run (factor 0.713). Last one. ")
    assert "old lease" not in out and out.count(means.names(KEYS)) == 1 and "(1.500, 1.500 us)" in out
    assert "benchmarks/gpu/a.json, benchmarks/gpu/b.json" in out
    assert means.with_note(out, KEYS, dict.fromkeys(KEYS, 1.5), sources) == out


def test_the_shipped_figures_are_what_the_committed_command_writes():
    data = json.loads(means.HOST_FILE.read_text())
    for keys, sources in means.GROUPS.items():
        leases = [json.loads(path.read_text())["per_op_us"] for path in sources]
        expected = means.mean_figures(data["per_op_us"], leases, keys)
        assert {key: data["per_op_us"][key] for key in keys} == pytest.approx(expected, abs=1e-9)
        assert data["notes"].count(means.names(keys)) == 1
    assert data["notes"].count("host_lease_means.py --write") == len(means.GROUPS)


def test_a_current_method_backward_figure_is_put_at_the_shipped_speed_by_each_speed_figure():
    shipped = {"module_forward_op_us": 18.0, "aten_op_us": 9.0}
    runs = [{"autograd_backward_op_us": 16.0, "module_forward_op_us": 10.0, "aten_op_us": 6.0},
            {"autograd_backward_op_us": 24.0, "module_forward_op_us": 14.0, "aten_op_us": 6.0}]
    # The runs' means: backward 20, forward 12 (shipped 1.5x slower), aten 6 (1.5x).
    assert means.current_backward_at_shipped_speed(shipped, runs) == pytest.approx(
        {"module_forward_op_us": 30.0, "aten_op_us": 30.0})
    assert all(path.exists() for sources in means.CURRENT_BACKWARD.values() for path in sources)


def test_the_shipped_figure_is_ranked_among_the_leases_fastest_first():
    leases = [{"aten_op_us": v} for v in (5.0, 7.0, 9.0, 11.0)]
    assert means.shipped_rank({"aten_op_us": 8.0}, leases, "aten_op_us") == (3, 8.0)  # two leases faster
    assert means.shipped_rank({"aten_op_us": 4.0}, leases, "aten_op_us") == (1, 8.0)
