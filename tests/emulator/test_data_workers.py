"""DataLoader worker processes and its pin-memory thread under emulation (a separate process, as
worker processes fork the emulating one)."""

import subprocess
import sys
from pathlib import Path

from maya.trace import read_rank_trace

SCRIPT = Path(__file__).parent / "scripts" / "data_workers.py"


def test_worker_batches_are_pinned_and_copied_without_a_wait(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "maya", "emulate", "--trace-dir", str(tmp_path / "t"), str(SCRIPT)],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "batches done" in done.stdout
    rows = read_rank_trace(tmp_path / "t", 0).to_pandas()
    copies = rows[(rows.kind == "memcpy") & rows.input_shapes.map(lambda s: len(s) > 0 and list(s[0]) == [16, 3, 224, 224])]
    assert len(copies) == 6  # 3 batches x 2 epochs, each copied from pinned memory: no sync after it
    following = rows.kind.shift(-1)[copies.index]
    assert (following != "sync").all()
