"""Config files: a good one loads; every kind of mistake names the file, the line or field, and why."""

import textwrap

import pytest

from maya.tune.config_file import ConfigError, load_study
from maya.tune.study import ClusterCandidate

from conftest import ROOT, TINY_SCRIPT

GOOD = f"""
from ray import tune

script = {str(TINY_SCRIPT)!r}
script_args = {{"steps": 2, "dim": 64}}
search_space = {{"micro_batch": tune.choice([2, 4, 8]), "precision": tune.choice(["bf16", "fp32"])}}
global_batch = 64
train_tokens = 64 * 128 * 1000
tokens_per_sample = 128
clusters = ["dgx-h100", {{"preset": "dgx-h200", "nodes": [1, 2], "price_per_gpu_hour_usd": 4.0, "label": "h200"}}]
objective = "time"
num_samples = 7
"""


def _write(tmp_path, text, name="study.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_good_config_loads(tmp_path):
    study = load_study(_write(tmp_path, GOOD))
    assert study.script == TINY_SCRIPT
    assert study.script_args == ("--steps", "2", "--dim", "64")
    assert study.steps_to_train == 1000  # 8,192,000 tokens / (64 samples * 128 tokens)
    assert study.clusters == (
        ClusterCandidate(preset="dgx-h100"),
        ClusterCandidate(preset="dgx-h200", nodes=(1, 2), price_per_gpu_hour_usd=4.0, label="h200"),
    )
    assert (study.objective, study.num_samples, study.search) == ("time", 7, "hyperopt")


def test_host_profiles_are_read_relative_to_the_config(tmp_path):
    # Each GPU's `maya profile --families host` output, read when the study is loaded (remote trials
    # then need no file): the shipped H200 one, copied beside the config.
    import shutil

    (tmp_path / "host").mkdir()
    shutil.copy(ROOT / "maya" / "estimator" / "data" / "h200" / "host_overhead.json", tmp_path / "host")
    study = load_study(_write(tmp_path, GOOD + 'host_profiles = {"h200": "host"}\n'))
    from maya.estimator.host_cost import host_overhead

    assert study.host_profiles == {"h200": host_overhead("h200")}


def test_examples_load():
    gpt = load_study(ROOT / "examples" / "tune_gpt.py")
    assert gpt.script == ROOT / "examples" / "train_gpt.py" and gpt.search == "grid"
    llama = load_study(ROOT / "examples" / "tune_llama.py")
    assert max(n for c in llama.clusters for n in c.nodes) * 8 == 1024 and llama.max_gpus == 1024


def _error(tmp_path, text) -> ConfigError:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as e:
        load_study(path)
    assert str(path) in str(e.value)
    return e.value


def test_syntax_error_names_the_line(tmp_path):
    e = _error(tmp_path, GOOD.replace("global_batch = 64", "global_batch = = 64"))
    assert e.line == GOOD.splitlines().index("global_batch = 64") + 1
    assert "syntax error" in e.reason and f":{e.line}:" in str(e)


def test_exception_while_running_names_the_line(tmp_path):
    e = _error(tmp_path, GOOD + "\nnum_samples = 1 // 0\n")
    assert "ZeroDivisionError" in e.reason and e.line == len(GOOD.splitlines()) + 2


def test_missing_field(tmp_path):
    e = _error(tmp_path, GOOD.replace("global_batch = 64\n", ""))
    assert e.field == "global_batch" and "missing" in e.reason
    assert "field 'global_batch'" in str(e)


def test_misspelt_field_is_pointed_out(tmp_path):
    e = _error(tmp_path, GOOD.replace("num_samples = 7", "num_sample = 7"))
    assert e.field == "num_sample" and "did you mean 'num_samples'" in e.reason


def test_empty_search_space(tmp_path):
    e = _error(tmp_path, GOOD.replace(
        'search_space = {"micro_batch": tune.choice([2, 4, 8]), "precision": tune.choice(["bf16", "fp32"])}',
        "search_space = {}"))
    assert e.field == "search_space" and "empty search space" in e.reason


def test_dimension_with_no_values(tmp_path):
    e = _error(tmp_path, GOOD.replace('tune.choice(["bf16", "fp32"])', "tune.choice([])"))
    assert e.field == "search_space" and "'precision' has no values" in e.reason


def test_global_batch_no_configuration_divides(tmp_path):
    e = _error(tmp_path, GOOD.replace("global_batch = 64", "global_batch = 7").replace("64 * 128", "7 * 128"))
    assert e.field == "global_batch"
    assert "no configuration can run" in e.reason and "global_batch=7 is not a multiple of micro_batch=2 * dp=8 = 16" in e.reason


@pytest.mark.parametrize(
    ("old", "new", "field", "words"),
    [
        ("global_batch = 64", "global_batch = '64'", "global_batch", "must be an integer"),
        ('objective = "time"', 'objective = "speed"', "objective", "'speed' is not one of"),
        ("tokens_per_sample = 128", "tokens_per_sample = 128\ntrain_steps = 5", "train_steps", "exactly one of"),
        ("tokens_per_sample = 128", "", "tokens_per_sample", "needs tokens_per_sample"),
        ('"dgx-h100", ', '"dgx-h999", ', "clusters", "unknown cluster 'dgx-h999'"),
        ("script = ", "script = 'no/such/train.py' or ", "script", "training script not found"),
        ("num_samples = 7", "num_samples = 7\nhost_profiles = {'h200': 'host'}", "host_profiles", "host profile"),
        ("num_samples = 7", "num_samples = 7\nhost_profiles = {'b300': 'host'}", "host_profiles", "not a GPU"),
        ("num_samples = 7", "num_samples = 7\nhost_profiles = ['host']", "host_profiles", "must be a dict"),
        ("num_samples = 7", "num_samples = 7\nhost_profiles = {'a100': " + repr(str(ROOT / "maya/estimator/data/h200")) + "}",
         "host_profiles", "['a100'] is the GPU of no candidate cluster (theirs: ['h100', 'h200'])"),
    ],
)
def test_bad_values_name_their_field(tmp_path, old, new, field, words):
    assert old in GOOD
    e = _error(tmp_path, GOOD.replace(old, new))
    assert e.field == field and words in e.reason, str(e)


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_study(tmp_path / "nope.py")
