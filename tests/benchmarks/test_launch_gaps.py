"""benchmarks/launch_gaps.py: steady steps' GPU busy and idle time from launch_gap_probe.py traces."""

import gzip
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from launch_gaps import iterations, lease_steps, union_us  # noqa: E402

PROBE = ROOT / "benchmarks" / "gpu" / "session37" / "s37a" / "launch_gaps"


def test_union_counts_overlapping_intervals_once():
    assert union_us([(0, 10), (5, 15), (20, 25), (21, 22)]) == 20
    assert union_us([]) == 0


def test_iterations_split_a_recorded_trace_at_its_marker_kernels(tmp_path):
    # gpt2_124m_bf16 on an H100: GPU-bound, so its three steady iterations run the same kernels for the same time.
    its = iterations(PROBE / "gpt2_124m_bf16.trace.json.gz")
    assert len(its) == 3
    busies = [busy for _, busy in its]
    assert all(0 < busy < span for span, busy in its)
    assert max(busies) / min(busies) < 1.01
    # A marker-less trace has no iterations: nothing is made up.
    with gzip.open(PROBE / "gpt2_124m_bf16.trace.json.gz", "rt") as f:
        data = json.load(f)
    data["traceEvents"] = [e for e in data["traceEvents"] if "spin_kernel" not in e.get("name", "")]
    bare = tmp_path / "bare.trace.json.gz"
    with gzip.open(bare, "wt") as f:
        json.dump(data, f)
    assert iterations(bare) == []


def test_lease_steps_read_every_ground_truth_part():
    steps = lease_steps(ROOT / "benchmarks" / "gpu" / "host_phase_h100" / "lease_d")
    assert len(steps) == 30 and steps["gpt2_124m_bf16"] > 0
