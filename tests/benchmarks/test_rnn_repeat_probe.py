"""benchmarks/gpu/rnn_repeat_probe.py --median-out: the held-out RNN rows with their median over processes."""

import importlib.util
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]
HELDOUT_RNN = ROOT / "benchmarks" / "gpu" / "heldout_ops_h200" / "rnn.parquet"
_spec = importlib.util.spec_from_file_location("rnn_repeat_probe", ROOT / "benchmarks" / "gpu" / "rnn_repeat_probe.py")
probe = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(probe)


def _process(path: Path, times: dict[int, list[float]]) -> None:
    results = [{"round": k, "row": row, "duration_us": t} for row, ts in times.items() for k, t in enumerate(ts)]
    results.append({"round": 0, "clocks_before": "", "clocks_after": "", "time": 0.0})
    path.write_text(json.dumps({"env": {}, "results": results}))


def test_median_over_every_process_and_round_of_the_rows_all_processes_timed(tmp_path):
    _process(tmp_path / "process1.json", {3: [100.0, 130.0], 5: [10.0]})
    _process(tmp_path / "process2.json", {3: [120.0], 5: [30.0], 7: [1.0]})  # row 7: one process only
    out = tmp_path / "median" / "rnn.parquet"
    assert probe.write_medians(tmp_path, HELDOUT_RNN, out) == 2
    written, original = pq.read_table(out), pq.read_table(HELDOUT_RNN)
    assert written.column("duration_us").to_pylist() == [120.0, 20.0]
    assert written.column("duration_us_single").to_pylist() == original.column("duration_us").to_pylist()[3:6:2]
    assert written.column("attrs").to_pylist() == original.column("attrs").to_pylist()[3:6:2]


def test_no_common_row_is_an_error(tmp_path):
    _process(tmp_path / "process1.json", {3: [1.0]})
    _process(tmp_path / "process2.json", {4: [1.0]})
    with pytest.raises(SystemExit, match="no row was timed by every process file"):
        probe.write_medians(tmp_path, HELDOUT_RNN, tmp_path / "x.parquet")
    with pytest.raises(SystemExit, match="no process"):
        probe.write_medians(tmp_path / "empty", HELDOUT_RNN, tmp_path / "x.parquet")


def test_median_table_of_named_processes_only(tmp_path):
    _process(tmp_path / "process1.json", {3: [100.0], 5: [10.0]})
    _process(tmp_path / "process2.json", {3: [300.0]})
    table = probe.median_table(tmp_path, HELDOUT_RNN, ["process1"])
    assert table.column("duration_us").to_pylist() == [100.0, 10.0]
    with pytest.raises(SystemExit, match="no process3.json"):
        probe.median_table(tmp_path, HELDOUT_RNN, ["process3"])


def test_estimator_accuracy_takes_retimed_rows_in_place_of_the_held_out_timing(tmp_path):
    spec = importlib.util.spec_from_file_location("estimator_accuracy", ROOT / "benchmarks" / "estimator_accuracy.py")
    accuracy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(accuracy)
    _process(tmp_path / "process1.json", {0: [7.0], 2: [9.0]})
    held = accuracy._read(HELDOUT_RNN.parent)
    table = accuracy.retime(held, HELDOUT_RNN.parent, {"rnn": tmp_path})
    families = table.column("family").to_pylist()
    rnn = table.filter(pa.array([f == "rnn" for f in families]))
    assert rnn.column("duration_us").to_pylist() == [7.0, 9.0]
    assert families.count("rnn") == 2 and len(families) == held.num_rows - pq.read_metadata(HELDOUT_RNN).num_rows + 2


def test_profile_runs_become_process_files_matched_by_signature(tmp_path):
    held = pq.read_table(HELDOUT_RNN)
    again = held.take(pa.array(list(reversed(range(held.num_rows)))))  # another order: matched by signature
    again = again.set_column(again.schema.get_field_index("duration_us"), "duration_us",
                             pa.array([2 * t for t in again.column("duration_us").to_pylist()]))
    pq.write_table(again, tmp_path / "run.parquet")
    probe.write_runs_as_processes(HELDOUT_RNN, [tmp_path / "run.parquet", HELDOUT_RNN], tmp_path / "out")
    table = probe.median_table(tmp_path / "out", HELDOUT_RNN, ["process1"])
    assert table.column("duration_us").to_pylist() == [2 * t for t in held.column("duration_us").to_pylist()]
    assert probe.median_table(tmp_path / "out", HELDOUT_RNN).column("duration_us").to_pylist() == pytest.approx(
        [1.5 * t for t in held.column("duration_us").to_pylist()])


def test_profile_run_without_a_signature_is_an_error(tmp_path):
    pq.write_table(pq.read_table(HELDOUT_RNN).slice(1), tmp_path / "short.parquet")
    with pytest.raises(SystemExit, match="lacks 1 of the 160 signatures"):
        probe.write_runs_as_processes(HELDOUT_RNN, [tmp_path / "short.parquet"], tmp_path / "out")
