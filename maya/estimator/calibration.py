"""Per-family scale factors that carry isolated-op profiles over to ops inside a training step.

An op timed alone (`maya profile`: random N(0,1) inputs, one launch after an L2 flush) does not run
at the speed it runs inside a training iteration: GEMMs run faster on training data (their power
draw, and so the clock, depends on the data), and memory-bound ops meet strided, broadcast and
mixed-dtype operands the profile grid covers thinly. `benchmarks/calibrate.py` measures, on the
calibration workloads only (never the held-out ones), the ratio of profiled GPU time per op family
(`benchmarks/gpu/op_times_h200`) to Maya's estimate, and writes it to
`calibration.json` beside the models it was fitted for (`data/h200/models/`). The estimator
multiplies exact and CatBoost estimates of a family by its factor; the same factor applies to every
workload. A models directory without the file (one you fitted yourself) is used unscaled.

A profile times one launch between two CUDA events, on an idle stream after an L2 flush; the
profiler's kernel time inside a training step leaves out what that costs: a one-element kernel
profiles at about 3.8 us and runs in about 1 us. So the calibration also holds `event_overhead_us`,
one figure for every op and family, fitted by `benchmarks/calibrate.py` together with the factors,
and `kernel_floor_us`, the shortest kernel the H200 profiler recorded
(`benchmarks/gpu/kernel_gap_h200.json`): a calibrated estimate is
`max(factor * estimate - event_overhead_us, kernel_floor_us)`.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

CALIBRATION_FILE = "calibration.json"


@dataclass(frozen=True)
class Calibration:
    """What `calibration.json` holds for one models directory."""

    family_scale: dict[str, float] = field(default_factory=dict)
    """Family -> factor; a family not named is not calibrated."""
    event_overhead_us: float = 0.0
    """Subtracted from every calibrated estimate after its factor (microseconds)."""
    kernel_floor_us: float = 0.0
    """The least a calibrated estimate becomes (microseconds)."""

    def apply(self, duration_us: np.ndarray, family: np.ndarray, rows: np.ndarray) -> None:
        """Calibrate `duration_us[rows]` in place, each by its `family`'s factor (others untouched)."""
        for name, scale in self.family_scale.items():
            at = rows & (family == name)
            duration_us[at] = np.maximum(duration_us[at] * scale - self.event_overhead_us, self.kernel_floor_us)


NO_CALIBRATION = Calibration()


@functools.cache
def load_calibration(models_dir: Path) -> Calibration:
    """The calibration of the models in `models_dir`; `NO_CALIBRATION` when they carry none."""
    path = Path(models_dir) / CALIBRATION_FILE
    if not path.exists():
        return NO_CALIBRATION
    data = json.loads(path.read_text())
    return Calibration(
        family_scale={k: float(v) for k, v in data["family_scale"].items()},
        event_overhead_us=float(data.get("event_overhead_us", 0.0)),
        kernel_floor_us=float(data.get("kernel_floor_us", 0.0)),
    )
