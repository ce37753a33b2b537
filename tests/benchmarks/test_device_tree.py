"""benchmarks/gpu/device_tree.sh moves the folders no device call reads out of the checkout and back."""

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu" / "device_tree.sh"
FOLDERS = ("benchmarks/gpu/host_profile_h200x4", "benchmarks/gpu/conv_kernels_h200", "benchmarks/gpu/random_draws_h200",
           "benchmarks/gpu/session37", "benchmarks/gpu/session39/s39b",
           "maya/estimator/data/h200/models")


def _run(root: Path, aside: Path, command: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MAYA_DEVICE_ROOT": str(root), "MAYA_DEVICE_ASIDE": str(aside)}
    return subprocess.run(["bash", str(SCRIPT), command], env=env, capture_output=True, text=True, check=False)


def test_out_and_back_round_trip_and_refuse_to_clobber(tmp_path):
    root, aside = tmp_path / "repo", tmp_path / "aside"
    for folder in FOLDERS:
        (root / folder).mkdir(parents=True)
        (root / folder / "data.bin").write_bytes(b"x" * 1000)
    (root / "kept.txt").write_text("stays\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)

    out = _run(root, aside, "out")
    assert out.returncode == 0, out.stderr
    assert "will carry 6 bytes" in out.stdout  # only kept.txt is left to carry
    assert not any((root / f).exists() for f in FOLDERS) and all((aside / f / "data.bin").exists() for f in FOLDERS)
    again = _run(root, aside, "out")  # a second `out` before `back` would lose track of them
    assert again.returncode == 1 and "run 'back' first" in again.stderr

    (root / FOLDERS[0]).mkdir(parents=True)  # something recreated one: `back` must not overwrite it
    refused = _run(root, aside, "back")
    assert refused.returncode == 1 and "exists again" in refused.stderr
    (root / FOLDERS[0]).rmdir()
    back = _run(root, aside, "back")
    assert back.returncode == 0, back.stderr
    assert all((root / f / "data.bin").read_bytes() == b"x" * 1000 for f in FOLDERS)
    assert _run(root, aside, "sideways").returncode == 2
