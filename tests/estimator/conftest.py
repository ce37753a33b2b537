"""Shared estimator fixtures: a real CPU-timed profile dataset, models fitted on it, and local Ray."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from maya.estimator.cpu_profile import write_cpu_profiles
from maya.estimator.fit import fit_models, read_profiles
from maya.trace import TRACE_SCHEMA

FIT_ITERATIONS = 300
"""Fewer boosting rounds than the shipped models use, to keep the suite fast."""


@pytest.fixture(scope="session")
def profile_dir(tmp_path_factory):
    """Ops timed on this CPU, written in the GPU profiler's Parquet layout."""
    path = tmp_path_factory.mktemp("profiles")
    write_cpu_profiles(path, seed=0)
    return path


@pytest.fixture(scope="session")
def fitted(profile_dir, tmp_path_factory):
    """(models_dir, FitReport) of real CatBoost models fitted on the CPU profiles."""
    models_dir = tmp_path_factory.mktemp("models")
    report = fit_models(profile_dir, models_dir, seed=0, gpu="h200", iterations=FIT_ITERATIONS)
    return models_dir, report


@pytest.fixture(scope="session")
def ray_local():
    """A real local Ray with two CPUs, shared by every test of the session."""
    ray = pytest.importorskip("ray")
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def trace_from_profiles(profiles: pa.Table, *, extra_kinds: bool = True) -> pa.Table:
    """A trace table (full `TRACE_SCHEMA`) whose kernel rows are the given profile rows.

    With `extra_kinds`, a sync, an event_record, a collective and a host-to-device memcpy row are
    appended, so that non-kernel handling is exercised too.
    """
    rows = profiles.select(
        ["op", "input_shapes", "input_dtypes", "input_strides", "output_shapes", "output_dtypes",
         "output_strides", "attrs", "flops", "bytes"]
    ).to_pylist()
    for row in rows:
        row["kind"] = "kernel"
    if extra_kinds:
        empty = {"input_shapes": [], "input_dtypes": [], "input_strides": [], "output_shapes": [],
                 "output_dtypes": [], "output_strides": [], "flops": 0.0}
        rows += [
            {**empty, "kind": "sync", "op": "cuda:synchronize", "attrs": "{}", "bytes": 0},
            {**empty, "kind": "event_record", "op": "cuda:event_record", "attrs": "{}", "bytes": 0},
            {**empty, "kind": "collective", "op": "nccl:all_reduce", "attrs": "{}", "bytes": 1 << 20},
            {**empty, "kind": "memcpy", "op": "aten::copy_", "bytes": 64 << 20,
             "attrs": json.dumps({"args": [], "kwargs": {}, "src": "cpu", "dst": "cuda",
                                  "non_blocking": False, "pinned": True})},
        ]
    for seq, row in enumerate(rows):
        row.update(seq=seq, iteration=0, phase="forward", module="", stream=0, event_id=-1,
                   allocated_bytes=0, reserved_bytes=0)
    return pa.Table.from_pylist(rows, schema=TRACE_SCHEMA)


@pytest.fixture(scope="session")
def profiles(profile_dir) -> pa.Table:
    """Every profile row of the CPU dataset, as one Arrow table."""
    return read_profiles(profile_dir)


@pytest.fixture(scope="session")
def make_trace():
    """`trace_from_profiles`, for tests that build traces."""
    return trace_from_profiles
