"""Shared fixtures: a real local Ray (num_cpus=2, session scope), paths to test scripts, a slow
host's profile, and `emulate_rank_isolated`, one rank of a multi-rank script emulated in a fresh
Python process.

PyTorch keeps DeviceMesh and process-group state across `destroy_process_group`, so two emulations
of mesh-based scripts in one process can see each other's groups. Each `emulate_rank_isolated` job
runs `maya.world.rank_emulation.emulate_rank` in its own interpreter and
unpickles the `RankResult`. Jobs run two at a time (the test machine has 2 CPUs) and are cached for
the session by (script, args, rank, world size); `prefetch` starts a module's jobs before its tests.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "emulator" / "scripts"


def pytest_configure(config):
    # The autograd engine sizes its per-device worker queues at the first backward in the process,
    # so Maya's proxy device must be registered before any test runs a backward pass.
    from maya.emulator.backend import install_backend

    install_backend()


@pytest.fixture(scope="session")
def ray_local():
    """A real local Ray cluster for the whole test session."""
    import ray

    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


@pytest.fixture
def scripts() -> Path:
    return SCRIPTS


@pytest.fixture
def slow_host_profile(tmp_path) -> Path:
    """A `maya profile --families host` output directory whose figures are three times the shipped
    H200 ones: a host three times slower than the machine the shipped figures were measured on."""
    import json

    from maya.estimator.host_cost import host_overhead

    profile = tmp_path / "slow_host"
    profile.mkdir()
    slower = {k: 3.0 * v for k, v in host_overhead("h200").items()}
    (profile / "host_overhead.json").write_text(json.dumps({"per_op_us": slower, "device": "cuda"}))
    return profile


_DRIVER = """
import pickle, sys
from maya.world.rank_emulation import emulate_rank
out, script, rank, world_size, *args = sys.argv[1:]
result = emulate_rank(script, args, "h200", int(rank), int(world_size), int(world_size))
with open(out, "wb") as f:
    pickle.dump(result, f)
"""


class IsolatedRanks:
    """Emulates single ranks in subprocesses, two at a time, each job once."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.pool = ThreadPoolExecutor(max_workers=2)
        self.jobs: dict[tuple, Future] = {}

    def prefetch(self, script: str | Path, args: list[str], *, rank: int, world_size: int) -> None:
        key = (str(script), tuple(args), rank, world_size)
        if key not in self.jobs:
            self.jobs[key] = self.pool.submit(self._run, *key)

    def __call__(self, script: str | Path, args: list[str], *, rank: int, world_size: int):
        """The `RankResult` of `rank` of a `world_size`-rank run of `script args`."""
        self.prefetch(script, args, rank=rank, world_size=world_size)
        return self.jobs[(str(script), tuple(args), rank, world_size)].result()

    def _run(self, script: str, args: tuple[str, ...], rank: int, world_size: int):
        out = Path(tempfile.mkdtemp(dir=self.workdir)) / "result.pkl"
        cmd = [sys.executable, "-c", _DRIVER, str(out), script, str(rank), str(world_size), *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"emulating rank {rank} of {script} {' '.join(args)} failed:\n{proc.stderr[-3000:]}")
        return pickle.loads(out.read_bytes())


@pytest.fixture(scope="session")
def emulate_rank_isolated(tmp_path_factory):
    ranks = IsolatedRanks(tmp_path_factory.mktemp("isolated_ranks"))
    yield ranks
    ranks.pool.shutdown(wait=True)
