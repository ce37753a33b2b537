"""`resimulate`: predict a cached trace on another cluster without emulating the script again.

This is the one place the tuner re-simulates. It uses `maya.simulate_trace_dir(trace_dir,
cluster=...)` when this Maya has it, and raises `NotImplementedError` otherwise, in which case the
tuner emulates instead (a cache miss). It only re-simulates a trace on a job of the world size it
was recorded with (another topology, node shape or network of the same job); a trace never stands
in for a different data-parallel degree until the simulator models that.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path

from maya.hardware.cluster import ClusterSpec

log = logging.getLogger(__name__)


def resimulate(trace_dir: str | Path, cluster: ClusterSpec, host_per_op_us: Mapping[str, float] | None = None):
    """The `EmulationSummary` of the trace in `trace_dir` simulated on `cluster` (with `host_per_op_us`
    in place of the shipped host figures, when given).

    Raises:
        NotImplementedError: this Maya cannot simulate a recorded trace on its own, or the trace
            was recorded for a different world size than `cluster`'s.
    """
    import maya

    try:
        simulate_trace_dir = maya.simulate_trace_dir
    except (AttributeError, ImportError) as e:
        raise NotImplementedError(f"maya.simulate_trace_dir is not available in this Maya: {e}") from e
    recorded = json.loads((Path(trace_dir) / "meta.json").read_text()).get("world_size")
    if recorded != cluster.world_size:
        raise NotImplementedError(
            f"trace of world_size={recorded} cannot stand for world_size={cluster.world_size}"
        )
    return simulate_trace_dir(trace_dir, cluster=cluster, host_profile=host_per_op_us)
