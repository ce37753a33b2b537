"""The world's traces written through a Ray Dataset: one partition per rank, read back unchanged."""

import logging

import pyarrow.compute as pc
from ray.util.debug import reset_log_once

import maya
from maya.trace import read_rank_trace
from maya.trace.dataset import write_traces_dataset

PROGRESS_WARNING_KEY = "ray_data_progress_manager_disabled"
"""ray.data._internal.progress's log_once key for its "Progress bars disabled" warning."""


def _one_rank_trace(tmp_path, scripts):
    summary = maya.emulate(scripts / "timed_steps.py", [str(tmp_path / "times.txt")], trace_dir=tmp_path / "one")
    assert summary.exit_code == 0, summary.error
    return read_rank_trace(tmp_path / "one", 0)


def test_each_rank_reads_back_its_own_rows_and_ray_data_logs_only_when_info_is_on(ray_local, tmp_path, scripts,
                                                                                 capfd, caplog):
    table = _one_rank_trace(tmp_path, scripts)
    shorter = table.slice(0, table.num_rows // 2)
    root = logging.getLogger()
    level = root.level
    try:
        # Ray Data prints through its own handler, or through the root logger's once logging is set
        # up (pytest's, here): look at both.
        root.setLevel(logging.WARNING)
        capfd.readouterr()
        caplog.clear()
        reset_log_once(PROGRESS_WARNING_KEY)  # Ray warns once per process
        write_traces_dataset(tmp_path / "quiet", {0: table, 1: shorter})
        quiet = capfd.readouterr().err + caplog.text
        root.setLevel(logging.INFO)
        caplog.clear()
        reset_log_once(PROGRESS_WARNING_KEY)
        write_traces_dataset(tmp_path / "verbose", {0: table, 1: shorter})
        verbose = capfd.readouterr().err + caplog.text
    finally:
        root.setLevel(level)
    assert "Data sink" not in quiet and "streaming_executor" not in quiet and "Progress bars disabled" not in quiet
    assert "Data sink" in verbose and "Progress bars disabled" in verbose
    for rank, expected in ((0, table), (1, shorter)):
        back = read_rank_trace(tmp_path / "quiet", rank)
        assert back.num_rows == expected.num_rows
        assert pc.all(pc.equal(back["op"], expected["op"])).as_py()
