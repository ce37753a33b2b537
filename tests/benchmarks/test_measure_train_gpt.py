"""benchmarks/gpu/measure_train_gpt.py's compile study: eager and compiled runs of the same flags, which
examples/train_gpt.py accepts."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def _module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_compile_study_pairs_each_eager_run_with_its_compiled_twin(monkeypatch):
    measure = _module(ROOT / "benchmarks" / "gpu" / "measure_train_gpt.py", "measure_train_gpt")
    train = _module(ROOT / "examples" / "train_gpt.py", "train_gpt")
    configs = {c["name"]: c["argv"] for c in measure.STUDIES["compile"]()}
    assert sorted(configs) == ["b16_compiled", "b16_eager", "b8_compiled", "b8_eager"]
    for batch in (8, 16):
        eager, compiled = configs[f"b{batch}_eager"], configs[f"b{batch}_compiled"]
        assert compiled == [*eager, "--compile"]
        monkeypatch.setattr(sys, "argv", ["train_gpt.py", *compiled])
        args = train.parse_args()
        assert args.compile and args.batch == batch and args.precision == "bf16" and args.dp == "ddp"
