"""Iterations of scripts that step several optimizers per training step (maya.emulator.iteration_cycles)."""

from __future__ import annotations

import logging

import pyarrow.compute as pc
import pytest

import maya
from maya.emulator.iteration_cycles import step_cycle
from maya.trace import read_rank_trace


@pytest.mark.parametrize(("owners", "cycle"), [
    ("a", 1), ("aaaa", 1), ("ab", 2), ("abab", 2), ("aba", 2), ("ddgddg", 3), ("ddgd", 3), ("abcabc", 3),
    ("aaab", None), ("abac", None), ("abb", None), ("aab", None),
])  # fmt: skip
def test_step_cycle(owners, cycle):
    assert step_cycle(list(owners)) == cycle


def _ends(summary) -> tuple[int, list[int], list[int]]:
    table = read_rank_trace(summary.trace_dir, 0)
    ends = int(pc.sum(pc.equal(table["kind"], "iteration_end")).as_py() or 0)
    return ends, table["seq"].to_pylist(), table["iteration"].to_pylist()


@pytest.mark.parametrize("d_steps", [1, 2])
def test_one_iteration_per_training_step_of_a_gan(scripts, tmp_path, caplog, d_steps):
    script = scripts / "two_optimizers.py"
    with caplog.at_level(logging.WARNING, logger="maya.emulator.iteration_cycles"):
        auto = maya.emulate(script, ["--steps", "4", "--d-steps", str(d_steps)], trace_dir=tmp_path / "auto")
    assert auto.exit_code == 0, auto.error
    assert f"{d_steps + 1} optimizer steps per training step (" + "SGD, " * d_steps + "Adam)" in caplog.text
    ends, seq, iteration = _ends(auto)
    assert ends == 4 and seq == list(range(len(seq)))
    assert iteration == sorted(iteration) and set(iteration) == {0, 1, 2, 3}
    assert [it.index for it in auto.iterations] == [0, 1, 2, 3]
    # The script's own marks after each training step give the same iterations.
    marked = maya.emulate(script, ["--steps", "4", "--d-steps", str(d_steps), "--mark"], trace_dir=tmp_path / "mark")
    assert marked.exit_code == 0, marked.error
    assert [it.time_ms for it in auto.iterations] == pytest.approx([it.time_ms for it in marked.iterations])
    assert [it.peak_allocated_bytes for it in auto.iterations] == [it.peak_allocated_bytes for it in marked.iterations]
    assert [it.flops for it in auto.iterations] == pytest.approx([it.flops for it in marked.iterations])
    assert auto.iterations[-1].flops > 0


def test_optimizers_in_no_repeating_order_end_an_iteration_each(scripts, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="maya.emulator.iteration_cycles"):
        s = maya.emulate(scripts / "two_optimizers.py", ["--steps", "3", "--order", "unrepeating"], trace_dir=tmp_path / "t")
    assert s.exit_code == 0, s.error
    assert "2 optimizers (Adam, SGD) stepped in no repeating order over 4 step() calls" in caplog.text
    assert _ends(s)[0] == 4 and len(s.iterations) == 4


def test_optimizers_of_one_class_are_numbered_in_the_warning(caplog):
    from maya.emulator.iteration_cycles import kept_ends

    ends = [(1, "Adam"), (1, "Adam"), (2, "Adam"), (3, "SGD")] * 2
    with caplog.at_level(logging.WARNING, logger="maya.emulator.iteration_cycles"):
        assert kept_ends(ends) == [False, False, False, True] * 2
    assert "4 optimizer steps per training step (Adam #1, Adam #1, Adam #2, SGD)" in caplog.text
