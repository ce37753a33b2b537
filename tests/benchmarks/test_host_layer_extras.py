"""benchmarks/host_layer_extras.py: the shipped CNN-layer host extras are the scaled mean over the leases."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "host_layer_extras.py"
_spec = importlib.util.spec_from_file_location("benchmarks_host_layer_extras", PATH)
extras = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = extras
_spec.loader.exec_module(extras)


def test_each_lease_is_scaled_to_the_shipped_host_speed_before_the_mean():
    shipped = {"autograd_backward_op_us": 30.0}
    fast = {"autograd_backward_op_us": 30.0, **dict.fromkeys(extras.EXTRAS, 20.0)}
    slow = {"autograd_backward_op_us": 60.0, **dict.fromkeys(extras.EXTRAS, 100.0)}  # 50 at the shipped speed
    assert extras.mean_extras(shipped, [fast, slow]) == dict.fromkeys(extras.EXTRAS, 35.0)


def test_the_note_on_the_extras_is_replaced_and_the_other_sentences_kept():
    names = ", ".join(extras.EXTRAS[:-1]) + f" and {extras.EXTRAS[-1]}"
    notes = f"First figure from a run (factor 0.713). {names} come from one old lease: factor 1.082. Last one."
    out = extras.with_extras_note(notes, dict.fromkeys(extras.EXTRAS, 1.5))
    assert out.startswith("First figure from a run (factor 0.713). Last one. ")
    assert "old lease" not in out and out.count(names) == 1 and "1.500, 1.500" in out
    assert extras.with_extras_note(out, dict.fromkeys(extras.EXTRAS, 1.5)) == out


def test_the_shipped_figures_are_what_the_committed_command_writes():
    data = json.loads(extras.HOST_FILE.read_text())
    leases = [json.loads(path.read_text())["per_op_us"] for path in extras.LEASES]
    expected = extras.mean_extras(data["per_op_us"], leases)
    assert {key: data["per_op_us"][key] for key in extras.EXTRAS} == pytest.approx(expected, abs=1e-9)
    assert "host_layer_extras.py --write" in data["notes"]
