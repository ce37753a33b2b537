"""Every `maya` subcommand answers --help; `maya emulate` exits with the script's status; `maya simulate`
re-times its trace; `maya report` prints a summary file's page again."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from maya.cli.main import main

ROOT = Path(__file__).parents[2]


def _maya(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "maya", *args], capture_output=True, text=True, cwd=ROOT, timeout=300)


@pytest.mark.parametrize("command", ["emulate", "profile", "fit", "report"])
def test_subcommand_help(command):
    r = _maya(command, "--help")
    assert r.returncode == 0, r.stderr
    assert "usage:" in r.stdout and command in r.stdout


def test_simulate_help(capsys):
    # In-process: a subprocess per --help costs seconds of imports.
    with pytest.raises(SystemExit) as exit_info:
        main(["simulate", "--help"])
    out = capsys.readouterr().out
    assert exit_info.value.code == 0
    assert "usage:" in out and "simulate" in out and "--cluster PRESET_OR_YAML" in out and "dgx-h100" in out


def test_top_level_help_lists_subcommands():
    r = _maya("--help")
    assert r.returncode == 0 and all(c in r.stdout for c in ("emulate", "simulate", "profile", "fit", "tune", "report"))


def test_emulate_missing_script_exits_2_with_message():
    r = _maya("emulate", "no/such/script.py")
    assert r.returncode == 2 and "training script not found" in r.stderr


def test_emulate_dash_m_runs_a_module_from_the_working_directory(monkeypatch, tmp_path, capsys):
    # In-process, from the folder that holds the package, as `torchrun -m module_entry.train` would run.
    monkeypatch.chdir(ROOT / "tests" / "emulator" / "scripts")
    assert main(["emulate", "--json", str(tmp_path / "s.json"), "-m", "module_entry.train", "--steps", "2"]) == 0
    assert "package module_entry rank 0" in capsys.readouterr().out
    assert len(json.loads((tmp_path / "s.json").read_text())["iterations"]) == 2
    assert main(["emulate", "-m", "no_such_package.train"]) == 2
    assert "training module not found: no_such_package" in capsys.readouterr().err


def test_profile_without_a_gpu_exits_2_naming_the_problem(tmp_path, capsys):
    # This machine has no GPU (the CI's neither): a clear error, not a traceback.
    assert main(["profile", "--out", str(tmp_path / "p"), "--families", "gemm"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("maya profile: error: no CUDA GPU here: torch.cuda.is_available() is False")
    assert "Traceback" not in err


def test_emulate_failing_script_exits_nonzero_with_rank_and_traceback():
    r = _maya("emulate", "tests/emulator/scripts/fails.py")
    assert r.returncode == 1
    assert "[rank 0]" in r.stderr and "the user's own bug" in r.stderr


def test_emulate_then_simulate_on_another_cluster(tmp_path, capsys):
    out = tmp_path / "s.json"
    r = _maya("emulate", "--json", str(out), "--trace-dir", str(tmp_path / "t"), "--samples-per-iteration", "2",
              "examples/train_gpt.py", "--steps", "2", "--batch", "2", "--seq", "64", "--dim", "64", "--layers", "2",
              "--heads", "4", "--vocab", "512")
    assert r.returncode == 0, r.stderr
    s = json.loads(out.read_text())
    assert s["world_size"] == 1 and s["oom"] is False and len(s["iterations"]) == 2
    assert all(it["time_ms"] > 0 for it in s["iterations"])
    assert s["samples_per_iteration"] == 2 and s["samples_per_s"] > 0 and 0 < s["mfu"] < 1
    assert (tmp_path / "t" / "timeline.json").exists()
    assert "step time" in r.stdout and "MFU" in r.stdout and "ui.perfetto.dev" in r.stdout

    # Re-time the stored trace on A100s, in-process: no emulation, the same summary shape.
    again = tmp_path / "a100.json"
    assert main(["simulate", str(tmp_path / "t"), "--cluster", "dgx-a100", "--json", str(again)]) == 0
    printed = capsys.readouterr().out
    assert "cluster dgx-a100" in printed and "figures from the emulated h200's allocator" in printed
    a100 = json.loads(again.read_text())
    assert a100["gpu"] == "a100" and a100["emulated_gpu"] == "h200"
    assert set(s) - {"estimate_sources"} <= set(a100)
    assert a100["peak_allocated_bytes"] == s["peak_allocated_bytes"]
    assert a100["median_iteration_ms"] != s["median_iteration_ms"]
    assert (tmp_path / "t" / "timeline-dgx-a100.json").exists()

    # `maya report` prints each run's page again from its JSON alone, as the run printed it.
    assert main(["report", str(again)]) == 0
    page = capsys.readouterr().out
    assert page.startswith("Maya prediction: 1 x NVIDIA A100") and page in printed
    assert main(["report", str(out)]) == 0
    page = capsys.readouterr().out
    assert "step time" in page and "MFU" in page and page in r.stdout

    # A host profile that is not there is named, with the command that makes one.
    assert main(["simulate", str(tmp_path / "t"), "--host-profile", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert "maya simulate: error: host profile" in err and "maya profile --families host" in err


def test_report_bad_input_exits_2_naming_the_problem(tmp_path, capsys):
    trace = tmp_path / "trace"
    trace.mkdir()
    (trace / "meta.json").write_text("{}")
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "other.json").write_text('{"world_size": 1}')
    (tmp_path / "text.json").write_text("not json")
    old_study = tmp_path / "old_study"
    old_study.mkdir()
    (old_study / "results.parquet").write_bytes(b"")
    cases = {
        str(tmp_path / "nowhere.json"): "no such file or directory",
        str(trace): f"`maya simulate {trace}`",
        str(tmp_path / "list.json"): "holds a JSON list",
        str(tmp_path / "other.json"): "not a `maya emulate --json` summary: no gpu, emulated_ranks, iterations, oom, trace_dir",
        str(tmp_path / "text.json"): "is not JSON",
        str(tmp_path): "holds no finished `maya tune` study (no results.parquet)",
        str(old_study): "a Maya before `maya report` wrote it",
    }
    for path, message in cases.items():
        assert main(["report", path]) == 2, path
        err = capsys.readouterr().err
        assert err.startswith("maya report: error: ") and message in err, err
    assert main(["report", str(tmp_path), "--top", "0"]) == 2
    assert "--top must be at least 1" in capsys.readouterr().err


def test_simulate_incomplete_trace_dir_exits_2_with_message(tmp_path, capsys):
    assert main(["simulate", str(tmp_path)]) == 2
    assert "maya simulate: error:" in capsys.readouterr().err


def test_simulate_bad_cluster_yaml_exits_2_naming_the_field(tmp_path, capsys):
    trace_dir = tmp_path / "t"
    (trace_dir / "rank=0").mkdir(parents=True)
    from maya.trace import write_meta

    write_meta(trace_dir, {"world_size": 1, "gpu": "h200", "emulated_ranks": [0]})
    spec = tmp_path / "bad.yaml"
    spec.write_text("gpu: b300\ngpus_per_node: 8\nnics_per_node: 8\nnic_bandwidth_Gbps: 400\n")
    assert main(["simulate", str(trace_dir), "--cluster", str(spec)]) == 2
    assert "cluster 'bad': gpu='b300' is not in the GPU catalog" in capsys.readouterr().err


def test_fit_bad_input_exits_2_naming_the_problem(tmp_path, capsys):
    assert main(["fit", "--profiles", str(tmp_path), "--out", str(tmp_path / "m")]) == 2
    assert "no profile Parquet files" in capsys.readouterr().err
    profiles = str(ROOT / "maya" / "estimator" / "data" / "h200")
    assert main(["fit", "--profiles", profiles, "--out", str(tmp_path / "m"), "--families", "nope",
                 "--no-exact-table"]) == 2
    assert "no profile rows of family nope (the profiles have conv, copy" in capsys.readouterr().err


def test_emulate_host_profile_prices_the_prediction_and_the_scripts_own_timings(tmp_path, capsys, slow_host_profile):
    """`maya emulate --host-profile`: the user's machine's host figures (three times the shipped ones
    here) lengthen a host-bound step, in the summary and in the step times the script logs itself."""
    script = ROOT / "tests" / "emulator" / "scripts" / "timed_steps.py"
    runs = {}
    for name, extra in (("shipped", []), ("slower", ["--host-profile", str(slow_host_profile)])):
        summary, log = tmp_path / f"{name}.json", tmp_path / f"{name}.txt"
        assert main(["emulate", *extra, "--json", str(summary), "--trace-dir", str(tmp_path / name), str(script),
                     str(log)]) == 0
        runs[name] = (json.loads(summary.read_text()), [float(t) for t in log.read_text().split()])
    (shipped, shipped_log), (slower_summary, slower_log) = runs["shipped"], runs["slower"]
    assert slower_summary["median_iteration_ms"] > 1.5 * shipped["median_iteration_ms"]
    for logged, iteration in zip(slower_log[1:], slower_summary["iterations"][1:]):
        assert logged == pytest.approx(iteration["time_ms"], rel=0.05)
    assert slower_log[-1] > 1.5 * shipped_log[-1]

    # A host profile that is not there is named before anything is emulated.
    assert main(["emulate", "--host-profile", str(tmp_path / "nowhere"), str(script), str(tmp_path / "x.txt")]) == 2
    err = capsys.readouterr().err
    assert "maya emulate: error: host profile" in err and "maya profile --families host" in err
    assert not (tmp_path / "x.txt").exists()
