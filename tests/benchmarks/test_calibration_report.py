"""benchmarks/calibration_report.py's per-shape comparison of a profiled iteration with Maya's trace rows."""

import importlib.util
import sys
from pathlib import Path

import pandas as pd

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))  # calibration_report imports profiler_ops from there
_spec = importlib.util.spec_from_file_location("benchmarks_calibration_report", BENCHMARKS / "calibration_report.py")
report = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = report
_spec.loader.exec_module(report)


def test_ops_are_compared_per_profiler_key_and_first_input_shape_largest_difference_first():
    kernels = pd.DataFrame({
        "op": ["aten::sum.dim_IntList", "aten::sum.dim_IntList", "aten::_to_copy", "aten::clone"],
        "input_shapes": [[[16384, 768]], [[16384, 3072]], [[8, 8]], [[8, 8]]],
        "duration_us": [23.0, 40.0, 2.0, 3.0],
    })
    profile = {"per_op_shape": [
        {"op": "aten::sum", "input_shapes": [[16384, 768], [], []], "count": 1, "self_device_us": 31.0},
        {"op": "aten::sum", "input_shapes": [[16384, 3072], [], []], "count": 1, "self_device_us": 41.0},
        {"op": "aten::copy_", "input_shapes": [[8, 8], [8, 8]], "count": 2, "self_device_us": 6.0},
        {"op": "aten::fill_", "input_shapes": [[4096], []], "count": 1, "self_device_us": 1.5},
    ]}
    rows = report.per_shape_rows(kernels, profile)
    # (key, first shape, measured us, estimated us, measured calls, estimated calls)
    assert rows[0] == ("aten::sum", "[16384, 768]", 31.0, 23.0, 1, 1)
    assert ("aten::copy_", "[8, 8]", 6.0, 5.0, 2, 2) in rows  # _to_copy and clone launch through copy_
    assert ("aten::fill_", "[4096]", 1.5, 0.0, 1, 0) in rows  # measured, with no trace row
    assert [abs(r[2] - r[3]) for r in rows] == sorted((abs(r[2] - r[3]) for r in rows), reverse=True)
    assert ("aten::sum", "[16384, 3072]", 41.0, 40.0, 1, 1) in rows and len(rows) == 4


def test_bands_sum_measured_and_estimated_per_element_count_band(capsys):
    # (first input's elements, measured us, estimated us): two pairs under 2**18 elements, one in
    # [2**21, 2**23), none in the other bands.
    report.print_bands("elementwise", [(1000, 3.0, 4.0), (2**18 - 1, 1.0, 1.0), (2**22, 12.0, 16.0)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "elementwise: per-shape pairs by the first input's element count (3 pairs, 0.0 ms measured)"
    assert len(lines) == 3
    assert "2 pairs" in lines[1] and "measured / estimated 0.800" in lines[1] and "25.0% of the time" in lines[1]
    assert lines[2].startswith("  [   2097152,    8388608) elements:   1 pairs")
    assert lines[2].endswith("measured / estimated 0.750")
