"""Shared fixtures: a real local Ray (num_cpus=2, session scope) and paths to test scripts."""

from __future__ import annotations

from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "emulator" / "scripts"


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
