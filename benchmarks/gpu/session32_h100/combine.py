"""Join the two halves of the session-32 H100 ground truth into benchmarks/validation/ground_truth_h100.json.

    python benchmarks/gpu/session32_h100/combine.py

(benchmarks/validation/combine_ground_truth.py on the two halves; same machine and lease: the env.txt
files name the same GPU, driver and versions.)
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "validation"))
from combine_ground_truth import main  # noqa: E402

sys.exit(main([str(HERE / f"s32_h100_{i}" / "ground_truth.json") for i in (1, 2)]
              + ["--out", str(ROOT / "benchmarks" / "validation" / "ground_truth_h100.json")]))
