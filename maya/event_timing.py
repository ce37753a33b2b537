"""`EventTimer`: answers a script's `torch.cuda.Event.elapsed_time` with Maya's prediction, during emulation.

When the script asks for the time between two of its events, the rows recorded between the two
records are estimated and simulated on one GPU of the target type, and the time between the two
records' completion is returned (milliseconds). The script's own step-time log then prints the
prediction. Exactness: the slice is simulated alone, so GPU work queued before the first record is
not waited for, and collectives in it cost nothing here (no peers are simulated mid-run); for one
GPU the figure matches the summary's iteration time closely, for several ranks it leaves out
waiting for the other ranks and communication (the summary's `time_ms` includes both).
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc


class EventTimer:
    """Callable installed as `EmulationState.elapsed_time_ms` (see the module docstring)."""

    def __init__(self, gpu: str, host_per_op_us: Mapping[str, float] | None = None) -> None:
        self.gpu = gpu
        self.host_per_op_us = host_per_op_us
        """Host figures in place of the shipped ones (`maya emulate --host-profile`); None: shipped."""

    def __call__(self, rows: list[tuple], first: int, last: int, stream: int) -> float:
        from torch.utils._python_dispatch import _disable_current_modes

        with _disable_current_modes():  # estimation must not be recorded as the script's own work
            return self._elapsed_ms(rows[first:last + 1])

    def _elapsed_ms(self, rows: list[tuple]) -> float:
        from maya.estimator.estimate import estimate_trace
        from maya.estimator.host_cost import host_costs_us, launch_stream_us
        from maya.hardware.cluster import cluster_for_gpu
        from maya.simulator import simulate
        from maya.trace.build import rows_to_table

        table = rows_to_table(rows)
        table = table.filter(pc.not_equal(table["kind"], "collective"))
        df = estimate_trace(table, gpu=self.gpu, warn_unmodelled=False)  # the final estimate warns once
        df["host_us"] = host_costs_us(df, self.gpu, per_op_us=self.host_per_op_us)
        df["launch_us"] = launch_stream_us(df, self.gpu, per_op_us=self.host_per_op_us)
        result = simulate({0: df}, cluster_for_gpu(self.gpu, 1))
        timeline = result.timelines[0]
        records = timeline.filter(pc.equal(timeline["kind"].cast(pa.string()), "event_record"))
        ends = records["end_us"].to_pylist()
        if len(ends) < 2:
            return 0.0
        return max(ends[-1] - ends[0], 0.0) / 1000.0
