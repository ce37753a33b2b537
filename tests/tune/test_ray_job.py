"""`ray job submit -- maya tune` on a real Ray head started with `ray start --head` (as on a cluster)."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest

from conftest import ROOT

BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def ray_head():
    """A Ray head in its own temp dir (`ray start --head --block`), torn down by ending that process."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "RAY_AUTH_MODE": "disabled"}
    temp_dir = tempfile.mkdtemp(prefix="mt-", dir="/tmp")  # short: Ray's socket paths must stay < 108 bytes
    dashboard = f"http://127.0.0.1:{(dashboard_port := _free_port())}"
    head = subprocess.Popen(
        [str(BIN / "ray"), "start", "--head", "--block", "--port", str(_free_port()), "--num-cpus", "2",
         "--temp-dir", temp_dir, "--include-dashboard", "true", "--dashboard-port", str(dashboard_port),
         # The job agent's port is fixed (52365) by default: another Ray on this machine would hold it.
         "--dashboard-agent-listen-port", str(_free_port()), "--disable-usage-stats"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        while subprocess.run([str(BIN / "ray"), "job", "list", "--address", dashboard], env=env,
                             capture_output=True).returncode != 0:
            assert head.poll() is None and time.monotonic() < deadline, "the Ray head did not come up"
            time.sleep(1)
        yield dashboard, env
    finally:
        head.terminate()  # `ray start --block` ends the processes it started on SIGTERM
        head.wait(timeout=60)
        shutil.rmtree(temp_dir, ignore_errors=True)


def test_ray_job_submit_runs_a_study_and_writes_results(ray_head, tmp_path):
    dashboard, env = ray_head
    out = tmp_path / "out"
    submit = [str(BIN / "ray"), "job", "submit", "--address", dashboard, "--working-dir", ".", "--",
              "maya", "tune", "tests/tune/configs/tiny_job.py", "--out", str(out)]
    deadline = time.monotonic() + 60
    while True:
        r = subprocess.run(submit, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        # The head's job agent registers a few seconds after its dashboard answers.
        if "No available agent to submit job" not in r.stderr or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert "maya tune: 2 trials: 2 ok" in r.stdout
    table = pd.read_parquet(out / "results.parquet")
    assert sorted(table["micro_batch"]) == [2, 4] and (table["status"] == "ok").all()
    assert (table["step_time_ms"] > 0).all() and len(pd.read_csv(out / "results.csv")) == 2
    for name in ("best.json", "best_timeline.json", "cost_vs_time.png", "top_k.csv", "pareto.csv"):
        assert (out / name).stat().st_size > 0, name
