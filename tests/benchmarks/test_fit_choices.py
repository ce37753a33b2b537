"""benchmarks/fit_choices.py --by-file: which convolution rows are the fixed grid's CNN layers."""

import importlib.util
import sys
from pathlib import Path

import pyarrow.parquet as pq

from maya.estimator.features import extract_features
from maya.estimator.profile_grid import CONV_LAYERS
from maya.hardware import load_gpu

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "maya" / "estimator" / "data" / "h200"
sys.path.insert(0, str(ROOT / "benchmarks"))
_spec = importlib.util.spec_from_file_location("fit_choices", ROOT / "benchmarks" / "fit_choices.py")
fit_choices = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fit_choices)


def _grid_rows(name: str) -> int:
    features = extract_features(pq.read_table(DATA / name), load_gpu("h200"))
    return int(fit_choices._conv_grid_layer(features).sum())


def test_the_grid_layers_are_found_in_the_grid_profile_and_not_among_random_draws():
    # Every CNN layer at bfloat16 and float32 x batch 16, 64, 256 and float16 x batch 64, both
    # layouts, forward and backward.
    assert _grid_rows("conv.parquet") == len(CONV_LAYERS) * (3 + 3 + 1) * 2 * 2
    assert _grid_rows("conv_draws_2.parquet") == 0


def test_conv_kinds_match_each_rows_weight_and_op():
    # --by-kind splits the held-out convolutions by depthwise / grouped / dense, kernel side and pass.
    table = pq.read_table(DATA / "conv_draws_2.parquet").slice(0, 400)
    kinds = fit_choices._conv_kind(extract_features(table, load_gpu("h200")))
    for kind, row in zip(kinds, table.to_pylist()):
        backward = row["op"] == "aten::convolution_backward"
        x, w = row["input_shapes"][1] if backward else row["input_shapes"][0], row["input_shapes"][2 if backward else 1]
        groups = x[1] // w[1]
        expected = "depthwise" if groups == x[1] > 1 else "grouped" if groups > 1 else "dense"
        assert kind == f"{expected} {w[2]}x{w[3]} {'backward' if backward else 'forward'}"
    assert {"dense", "depthwise"} <= {kind.split()[0] for kind in kinds}


def test_score_new_scores_held_out_new_rows_apart(tmp_path):
    # The copy rows split in two files: the second half is "new", a fifth of its signatures held out.
    import subprocess

    table = pq.read_table(DATA / "copy.parquet")
    half = table.num_rows // 2
    pq.write_table(table.slice(0, half), tmp_path / "before.parquet")
    pq.write_table(table.slice(half), tmp_path / "new.parquet")
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "fit_choices.py"), "--family", "copy", "--new", "new.parquet",
         "--score-new", "--profiles", str(tmp_path)],
        capture_output=True, text=True, check=True, cwd=ROOT,
    ).stdout
    new_lines = [line for line in out.splitlines() if "held-out new rows (" in line]
    assert len(new_lines) == 2 and new_lines[0].startswith("| before (") and new_lines[1].startswith("| before + new (")
    held_new = int(out.splitlines()[0].split(" and ")[1].split()[0])
    assert 0 < held_new < table.num_rows - half
    # Neither fit trains on a held-out new row: the before + new fit has every row but the held-out ones.
    before_new_rows = int(new_lines[1].split("(")[1].split(")")[0])
    held_before = int(out.splitlines()[0].split("scored on ")[1].split()[0])
    assert before_new_rows == table.num_rows - held_before - held_new


def test_every_named_setting_builds_and_an_unknown_one_is_refused_before_any_fit():
    import subprocess

    from maya.estimator.fit import import_catboost

    catboost = import_catboost()
    depths = {name: fit_choices.settings(catboost, "copy", name, ["op"]).get_params()["depth"]
              for name in fit_choices.SETTINGS}
    assert depths["deeper"] == depths["deeper-half"] == 10
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "fit_choices.py"), "--family", "copy",
                           "--settings", "shipped,bogus", "--profiles", "/nonexistent"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "unknown setting(s) bogus" in done.stderr
