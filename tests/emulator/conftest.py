"""`emulate_rank_isolated`: one rank of a multi-rank script, emulated in a fresh Python process.

PyTorch keeps DeviceMesh and process-group state across `destroy_process_group`, so two emulations
of mesh-based scripts in one process can see each other's groups. Each call here runs
`maya.world.rank_actor.emulate_rank` in its own interpreter (as a Ray actor would) and unpickles the
`RankResult`; results are cached for the session by (script, args, rank, world size).
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest

_DRIVER = """
import pickle, sys
from maya.world.rank_actor import emulate_rank
out, script, rank, world_size, local_world_size, *args = sys.argv[1:]
result = emulate_rank(script, args, "h200", int(rank), int(world_size), int(local_world_size))
with open(out, "wb") as f:
    pickle.dump(result, f)
"""


@pytest.fixture(scope="session")
def emulate_rank_isolated(tmp_path_factory):
    cache: dict[tuple, object] = {}

    def run(script: str | Path, args: list[str], *, rank: int, world_size: int):
        key = (str(script), tuple(args), rank, world_size)
        if key not in cache:
            out = tmp_path_factory.mktemp("rank") / "result.pkl"
            cmd = [sys.executable, "-c", _DRIVER, str(out), str(script), str(rank), str(world_size), str(world_size), *args]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            assert proc.returncode == 0, proc.stderr[-3000:]
            cache[key] = pickle.loads(out.read_bytes())
        return cache[key]

    return run
