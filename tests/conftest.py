"""Shared fixtures: a real local Ray (num_cpus=2, session scope) and paths to test scripts."""

from __future__ import annotations

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
