"""`maya tune` from the command line: --help, bad input before any Ray work, interrupt and --resume, and
`maya report` of its output directory."""

import os
import signal
import subprocess
import sys
import time

import pandas as pd

from conftest import ROOT, TINY_SCRIPT


def _config(tmp_path, *, extra_args=(), space="tune.choice([1, 2, 4, 8])", name="study.py"):
    path = tmp_path / name
    path.write_text(
        "from ray import tune\n"
        f"script = {str(TINY_SCRIPT)!r}\n"
        f"script_args = {['--steps', '2', '--dim', '32', *extra_args]!r}\n"
        f"search_space = {{'micro_batch': {space}}}\n"
        "global_batch = 8\n"
        "train_steps = 1000\n"
        "clusters = [{'preset': 'dgx-h200', 'gpus_per_node': 1}]\n"
        "search = 'grid'\n"
    )
    return path


def _maya(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "maya", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300, **kwargs)


def test_tune_help():
    r = _maya("tune", "--help")
    assert r.returncode == 0 and "usage:" in r.stdout and "--resume" in r.stdout


def test_bad_config_fails_at_once_naming_file_and_field(tmp_path):
    config = _config(tmp_path, space="tune.choice([3, 5])")  # neither divides the global batch of 8
    started = time.monotonic()
    r = _maya("tune", str(config), "--out", str(tmp_path / "out"))
    assert r.returncode == 2
    assert f"{config}: field 'global_batch': no configuration can run" in r.stderr
    assert "Started a local Ray" not in r.stderr and not (tmp_path / "out").exists()
    assert time.monotonic() - started < 60


def test_interrupted_study_resumes_where_it_stopped(ray_local, tmp_path):
    # Micro-batch 8 blocks until `release` exists: the other three finish, then SIGINT stops the
    # study; `--resume` runs only the unfinished one.
    release = tmp_path / "release"
    config = _config(tmp_path, extra_args=("--block-on-batch", "8", "--block-until", str(release)))
    out = tmp_path / "out"
    address = ray_local.get_runtime_context().gcs_address
    command = [sys.executable, "-m", "maya", "tune", str(config), "--out", str(out), "--address", address]
    first = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and sum(line.startswith("[") for line in lines) < 3:
        line = first.stderr.readline()
        assert line or first.poll() is None, "".join(lines)
        lines.append(line)
    assert sum(line.startswith("[") for line in lines) == 3, "".join(lines)
    first.send_signal(signal.SIGINT)
    stdout, stderr = first.communicate(timeout=120)
    assert "--resume" in stdout, stdout + stderr

    release.touch()
    second = _maya("tune", str(config), "--out", str(out), "--address", address, "--resume")
    assert second.returncode == 0, second.stderr
    progress = [line for line in second.stderr.splitlines() if line.startswith("[")]
    assert len(progress) == 1 and "micro_batch=8" in progress[0] and progress[0].startswith("[4/4]")
    table = pd.read_csv(out / "results.csv")
    assert sorted(table["micro_batch"]) == [1, 2, 4, 8] and (table["status"] == "ok").all()
    assert table["trial_id"].is_unique

    # `maya report OUT` prints the finished study's page again from its files alone, and more of it on request.
    again = _maya("report", str(out))
    assert again.returncode == 0, again.stderr
    assert again.stdout == second.stdout and "top 4 by cost" in again.stdout
    shorter = _maya("report", str(out), "--top", "1")
    assert shorter.returncode == 0 and "top 1 by cost" in shorter.stdout and "  2. $" not in shorter.stdout


def test_existing_study_is_not_overwritten(tmp_path):
    config = _config(tmp_path)
    (tmp_path / "out" / "tune").mkdir(parents=True)
    r = _maya("tune", str(config), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "already holds a study" in r.stderr
    assert os.listdir(tmp_path / "out" / "tune") == []
