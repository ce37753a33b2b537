"""benchmarks/float8_gemm_check.py: the join of a GPU's and Maya's probe files, and its errors."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import float8_gemm_check  # noqa: E402


def _file(path: Path, times: dict) -> Path:
    rows = [{"m": m, "n": 64, "k": 64, "kind": kind, "median_ms": ms} for (m, kind), ms in times.items()]
    path.write_text(json.dumps({"env": {"gpu_name": "NVIDIA H200"}, "rows": rows}))
    return path


def test_errors_speedups_and_the_summary(tmp_path):
    gpu = _file(tmp_path / "gpu.json", {(1, "bfloat16"): 0.010, (1, "float8"): 0.008, (2, "float8"): 0.020})
    maya = _file(tmp_path / "maya.json", {(1, "bfloat16"): 0.011, (1, "float8"): 0.006, (3, "float8"): 1.0})
    df = float8_gemm_check.joined(json.loads(gpu.read_text()), json.loads(maya.read_text()))
    assert list(df.kind) == ["bfloat16", "float8"]  # only the rows both files have
    assert df.error.tolist() == pytest.approx([0.1, -0.25])
    assert df.speedup.tolist() == pytest.approx([1.0, 1.25])
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "float8_gemm_check.py"), str(gpu), str(maya)],
                         capture_output=True, text=True, check=True).stdout
    assert "| 1 | 64 | 64 | float8 | 8.0 | 6.0 | -25.0% | 1.25x |" in out
    assert "- float8: median |error| 25.0%, time-weighted 25.0% over 1 shapes" in out
