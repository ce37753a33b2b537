"""The validation suite's definition and the ground-truth driver, checked on the CPU."""

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

VALIDATION_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "validation"
sys.path.insert(0, str(VALIDATION_DIR))  # measure_ground_truth.py imports `suite` as its neighbour

import measure_ground_truth  # noqa: E402
from suite import WORKLOADS, Workload  # noqa: E402


def load_script(script_path):
    spec = importlib.util.spec_from_file_location(f"validation_{script_path.stem}", script_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_suite_size_names_and_held_out_share():
    names = [w.name for w in WORKLOADS]
    assert len(names) >= 16
    assert len(set(names)) == len(names), "workload names must be unique"
    held_out = [w for w in WORKLOADS if w.held_out]
    assert 0.25 <= len(held_out) / len(WORKLOADS) <= 0.42, f"{len(held_out)} of {len(WORKLOADS)} held out"
    # Spread over families: held-out runs use several different scripts, and so do the others.
    assert len({w.script for w in held_out}) >= 6
    assert len({w.script for w in WORKLOADS if not w.held_out}) >= 8


def test_every_script_exists_and_there_are_16():
    for workload in WORKLOADS:
        assert workload.script_path.is_file(), workload.script_path
    assert len(list((VALIDATION_DIR / "workloads").glob("*.py"))) >= 16


def test_every_entry_argv_parses():
    # Catches a flag in suite.py that its script does not define, without starting a process.
    for workload in WORKLOADS:
        module = load_script(workload.script_path)
        args = module.parse_args(list(workload.argv))
        assert args.steps >= 1 and args.warmup >= 1, workload.name


# Runs every script's `--help` as `__main__` inside one child process, so torch and transformers are
# imported once (16 separate processes take about a minute on a 2-core machine). Each help text is
# printed between markers so the parent can check it.
HELP_RUNNER = """
import contextlib, io, runpy, sys
for path in sys.argv[1:]:
    sys.argv = [path, "--help"]
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(path, run_name="__main__")
        code = "no exit"
    except SystemExit as exc:
        code = exc.code
    print(f"=== {path} exit={code}")
    print(out.getvalue())
"""


def test_every_script_help_runs():
    scripts = sorted({str(w.script_path) for w in WORKLOADS})
    proc = subprocess.run([sys.executable, "-c", HELP_RUNNER, *scripts], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    sections = proc.stdout.split("=== ")[1:]
    assert len(sections) == len(scripts)
    for section, path in zip(sections, scripts):
        header, _, help_text = section.partition("\n")
        assert header == f"{path} exit=0", header
        for flag in ("--steps", "--warmup", "--batch-size", "usage:"):
            assert flag in help_text, f"{Path(path).name} --help lacks {flag}"


def test_measure_ground_truth_help_runs():
    proc = subprocess.run([sys.executable, str(VALIDATION_DIR / "measure_ground_truth.py"), "--help"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "--only" in proc.stdout and "--out" in proc.stdout


SAMPLE_OUTPUT = """number of parameters: 123.65M
step 0: loss 10.9876
MAYA_RESULT {"step_ms": [1.0], "median_step_ms": 1.0, "max_memory_allocated": 1, "max_memory_reserved": 2}
step 4: loss 9.8765
MAYA_RESULT {"step_ms": [40.5, 41.25, 39.75], "median_step_ms": 40.5, "max_memory_allocated": 12884901888, "max_memory_reserved": 15032385536}
"""


def test_parse_maya_result_takes_the_last_result_line():
    result = measure_ground_truth.parse_maya_result(SAMPLE_OUTPUT)
    assert result == {
        "step_ms": [40.5, 41.25, 39.75],
        "median_step_ms": 40.5,
        "max_memory_allocated": 12 * 1024**3,
        "max_memory_reserved": 14 * 1024**3,
    }


@pytest.mark.parametrize("output", [
    "",
    "step 0: loss 1.0\n",
    "MAYA_RESULT {not json}\n",
    'MAYA_RESULT {"step_ms": [1.0], "median_step_ms": 1.0}\n',  # memory keys missing
    'info: MAYA_RESULT {"step_ms": [1.0], "median_step_ms": 1.0, "max_memory_allocated": 1, "max_memory_reserved": 1}\n',
])
def test_parse_maya_result_rejects_bad_output(output):
    assert measure_ground_truth.parse_maya_result(output) is None


def test_run_workload_records_result_and_child_environment(tmp_path):
    # A stand-in script reports the multicast switches it sees through its MAYA_RESULT payload.
    script = tmp_path / "fake_workload.py"
    script.write_text(
        "import json, os, sys\n"
        "print('step 0: loss 1.0')\n"
        "env = {k: os.environ.get(k) for k in ('NCCL_NVLS_ENABLE', 'TORCH_SYMM_MEM_DISABLE_MULTICAST', 'NVSHMEM_DISABLE_NVLS')}\n"
        "print('MAYA_RESULT ' + json.dumps({'step_ms': [2.0, 3.0, 4.0], 'median_step_ms': 3.0,\n"
        "      'max_memory_allocated': 100, 'max_memory_reserved': 200, 'env': env, 'argv': sys.argv[1:]}))\n"
    )
    workload = Workload(name="fake", script=str(script), argv=("--batch-size", "2"))
    record = measure_ground_truth.run_workload(workload, timeout_s=60)
    assert record["ok"] and record["returncode"] == 0
    assert record["median_step_ms"] == 3.0 and record["step_ms"] == [2.0, 3.0, 4.0]
    assert record["max_memory_allocated"] == 100 and record["max_memory_reserved"] == 200
    assert record["argv"] == ["--batch-size", "2"] and record["wall_s"] > 0

    # The env is checked by a second script that fails unless the switches are set.
    check = tmp_path / "check_env.py"
    check.write_text(
        "import os, sys\n"
        "assert os.environ['NCCL_NVLS_ENABLE'] == '0'\n"
        "assert os.environ['TORCH_SYMM_MEM_DISABLE_MULTICAST'] == '1'\n"
        "assert os.environ['NVSHMEM_DISABLE_NVLS'] == '1'\n"
        "print('MAYA_RESULT {\"step_ms\": [1.0], \"median_step_ms\": 1.0, \"max_memory_allocated\": 0, \"max_memory_reserved\": 0}')\n"
    )
    assert measure_ground_truth.run_workload(Workload(name="env", script=str(check)), timeout_s=60)["ok"]


def test_run_workload_records_failures_and_timeouts(tmp_path):
    crash = tmp_path / "crash.py"
    crash.write_text("import sys\nprint('partial output')\nsys.stderr.write('RuntimeError: CUDA out of memory\\n')\nsys.exit(3)\n")
    record = measure_ground_truth.run_workload(Workload(name="crash", script=str(crash)), timeout_s=60)
    assert not record["ok"] and record["returncode"] == 3
    assert "CUDA out of memory" in record["stderr_tail"] and record["median_step_ms"] is None

    silent = tmp_path / "silent.py"
    silent.write_text("print('no result line')\n")
    record = measure_ground_truth.run_workload(Workload(name="silent", script=str(silent)), timeout_s=60)
    assert not record["ok"] and record["returncode"] == 0 and "MAYA_RESULT" in record["error"]

    hang = tmp_path / "hang.py"
    hang.write_text("import time\ntime.sleep(60)\n")
    record = measure_ground_truth.run_workload(Workload(name="hang", script=str(hang)), timeout_s=1)
    assert not record["ok"] and record["timed_out"] and record["wall_s"] < 30


def test_main_writes_json_for_a_subset(tmp_path, monkeypatch):
    script = tmp_path / "ok.py"
    script.write_text("print('MAYA_RESULT {\"step_ms\": [5.0], \"median_step_ms\": 5.0, "
                      "\"max_memory_allocated\": 7, \"max_memory_reserved\": 8}')\n")
    fake_suite = (Workload(name="a", script=str(script), held_out=True), Workload(name="b", script=str(script)))
    monkeypatch.setattr(measure_ground_truth, "WORKLOADS", fake_suite)
    out = tmp_path / "gt.json"
    assert measure_ground_truth.main(["--only", "b", "--out", str(out)]) == 0
    payload = json.loads(out.read_text())
    assert [r["name"] for r in payload["workloads"]] == ["b"]
    assert payload["workloads"][0]["median_step_ms"] == 5.0
    for key in ("gpu_name", "torch_version", "torch_cuda_version", "cudnn_version", "driver_version", "hostname",
                "date_utc", "command", "gpu_total_memory_bytes"):
        assert key in payload["environment"]
    with pytest.raises(SystemExit):
        measure_ground_truth.main(["--only", "no_such_workload", "--out", str(out)])


def test_a_run_stopped_by_sigterm_kills_its_workload_and_keeps_the_environment(tmp_path):
    """`timeout` stops a long run with SIGTERM: the workload running is killed, what was measured is
    kept, and the environment is still written (with `stopped_by`), where it used to stay null."""
    quick, hang, started = tmp_path / "quick.py", tmp_path / "hang.py", tmp_path / "hang.pid"
    quick.write_text("print('MAYA_RESULT {\"step_ms\": [1.0], \"median_step_ms\": 1.0, "
                     "\"max_memory_allocated\": 0, \"max_memory_reserved\": 0}')\n")
    hang.write_text(f"import os, time\nopen({str(started)!r}, 'w').write(str(os.getpid()))\ntime.sleep(120)\n")
    out = tmp_path / "gt.json"
    driver = tmp_path / "driver.py"
    driver.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(VALIDATION_DIR)!r})\n"
        "import measure_ground_truth as m\n"
        "from suite import Workload\n"
        f"m.WORKLOADS = [Workload(name='quick', script={str(quick)!r}), Workload(name='hang', script={str(hang)!r})]\n"
        f"sys.exit(m.main(['--out', {str(out)!r}, '--timeout-s', '100']))\n"
    )
    proc = subprocess.Popen([sys.executable, str(driver)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while not started.exists() or not started.read_text():
        assert time.monotonic() < deadline and proc.poll() is None, "the hanging workload never started"
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, output
    payload = json.loads(out.read_text())
    assert [w["name"] for w in payload["workloads"]] == ["quick"]
    assert payload["environment"]["stopped_by"] == "SIGTERM" and payload["environment"]["torch_version"]
    with pytest.raises(ProcessLookupError):  # the workload was killed with the run
        os.kill(int(started.read_text()), 0)
