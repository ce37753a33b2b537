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
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

CALIBRATION_FILE = "calibration.json"


@functools.cache
def family_scales(models_dir: Path) -> dict[str, float]:
    """Family -> factor for the models in `models_dir`; empty when they carry no calibration."""
    path = Path(models_dir) / CALIBRATION_FILE
    if not path.exists():
        return {}
    return {k: float(v) for k, v in json.loads(path.read_text())["family_scale"].items()}
