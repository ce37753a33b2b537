"""Broad coverage: about 120 ops, 32 training-script patterns and 10 Hugging Face architectures run under
`maya emulate` (each case in its script; a case that fails prints its name and error, so the assertion
shows which)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "scripts"


@pytest.mark.parametrize("script, label, least", [
    ("op_zoo.py", "op zoo", 100), ("training_patterns.py", "training patterns", 32), ("hf_zoo.py", "hf zoo", 10)])
def test_every_case_runs(tmp_path, script, label, least):
    done = subprocess.run(
        [sys.executable, "-m", "maya", "emulate", "--trace-dir", str(tmp_path / "t"), str(SCRIPTS / script)],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ran = re.search(rf"{label}: (\d+) of (\d+) cases ran", done.stdout)
    assert ran, done.stdout[-3000:]
    assert int(ran.group(2)) >= least and ran.group(1) == ran.group(2), done.stdout[-3000:]
