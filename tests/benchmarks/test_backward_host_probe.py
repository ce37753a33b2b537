"""benchmarks/gpu/backward_host_probe.py --summarize: the pooled figures docs/accuracy.md quotes."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("backward_host_probe", ROOT / "benchmarks" / "gpu" / "backward_host_probe.py")
probe = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(probe)


def test_pooled_pairs_give_old_over_new_and_the_fixed_cost():
    rows = [{"before_fix_op_us": 30.0, "op_us": 15.0, "call_us": 300.0},
            {"before_fix_op_us": 30.0, "op_us": 20.0, "call_us": 100.0},
            {"before_fix_op_us": 40.0, "op_us": 16.0, "call_us": 200.0}]
    out = probe.summary(rows)
    assert out["pairs"] == 3 and out["old_over_new_median"] == pytest.approx(2.0)
    assert (out["old_over_new_min"], out["old_over_new_max"]) == pytest.approx((1.5, 2.5))
    assert (out["op_us_min"], out["op_us_max"], out["call_us_median"]) == (15.0, 20.0, 200.0)


def test_the_committed_session_35_probes_give_the_documented_figures():
    files = [ROOT / "benchmarks" / "gpu" / "session35" / d / "backward_host.json" for d in ("s35", "s35/after", "s35b/after")]
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu" / "backward_host_probe.py"), "--summarize",
                           *map(str, files)], capture_output=True, text=True, check=True)
    out = json.loads(proc.stdout)
    assert out["pairs"] == 11 and round(out["old_over_new_median"], 2) == 1.79
    assert "1.79x" in (ROOT / "docs" / "accuracy.md").read_text()
