"""`maya emulate` with several ranks starts a local Ray by itself when none is running."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

GPT = Path(__file__).parents[2] / "examples" / "train_gpt.py"
TINY = ["--batch", "2", "--seq", "64", "--dim", "64", "--layers", "2", "--heads", "4", "--vocab", "512", "--steps", "2"]


def test_cli_starts_its_own_ray_when_none_is_running(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    ray_dir = tempfile.mkdtemp(prefix="r", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    env["RAY_TMPDIR"] = ray_dir  # no cluster to find there: Maya must start one
    summary = tmp_path / "s.json"
    try:
        r = subprocess.run(
            [sys.executable, "-m", "maya", "emulate", "--nproc-per-node", "2", "--json", str(summary),
             "--trace-dir", str(tmp_path / "t"), str(GPT), *TINY],
            capture_output=True, text=True, env=env, timeout=600,
        )
    finally:
        shutil.rmtree(ray_dir, ignore_errors=True)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "emulating rank 0" in r.stderr
    s = json.loads(summary.read_text())
    assert s["world_size"] == 2 and s["emulated_ranks"] == [0]
    assert all(it["time_ms"] > 0 for it in s["iterations"])
