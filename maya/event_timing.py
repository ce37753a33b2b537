"""`EventTimer`: answers a script's `torch.cuda.Event.elapsed_time` with Maya's prediction, during emulation.

When the script asks for the time between two of its events, the rows recorded between the two
records are estimated and simulated on one GPU of the target type, and the time between the two
records' completion is returned (milliseconds). The script's own step-time log then prints the
prediction. The simulated slice starts at the host's last wait for the GPU before the first record
(a `synchronize()`, an `item()`: a sync row, when one is among the `LOOKBACK_ROWS` rows before it),
where both were idle, so that GPU work queued before the first record delays it as on a GPU (a
microbenchmark that flushes the L2 cache and then times one kernel times the kernel, not the host's
launch of it); without such a row the slice starts at the first record with an idle GPU.
The simulation is calibrated as the prediction's (`maya.predict.default_params`: the gap between
queued kernels, a CUDA graph's own). Collectives cost nothing here (no peers are simulated mid-run):
for one GPU the figure matches the summary's iteration time closely, for several ranks it leaves out waiting for the other ranks and
communication (the summary's `time_ms` includes both).
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc

from maya.emulator.state import ROW_FIELDS
from maya.trace import EventKind

LOOKBACK_ROWS = 20_000
"""How far before the first record the timer looks for the host's last wait for the GPU."""
_SYNC = EventKind.SYNC.value
_SEQ, _KIND = ROW_FIELDS.index("seq"), ROW_FIELDS.index("kind")


class EventTimer:
    """Callable installed as `EmulationState.elapsed_time_ms` (see the module docstring)."""

    def __init__(self, gpu: str, host_per_op_us: Mapping[str, float] | None = None) -> None:
        self.gpu = gpu
        self.host_per_op_us = host_per_op_us
        """Host figures in place of the shipped ones (`maya emulate --host-profile`); None: shipped."""
        self._params = None
        """The simulation's calibration for the GPU (kernel gaps), as the prediction's (`maya.predict.default_params`)."""

    def __call__(self, rows: list[tuple], first: int, last: int, stream: int) -> float:
        from torch.utils._python_dispatch import _disable_current_modes

        begin = next((i for i in range(first, max(first - LOOKBACK_ROWS, -1), -1) if rows[i][_KIND] == _SYNC), first)
        with _disable_current_modes():  # estimation must not be recorded as the script's own work
            return self._elapsed_ms(rows[begin:last + 1], rows[first][_SEQ], rows[last][_SEQ])

    def _elapsed_ms(self, rows: list[tuple], start_seq: int, end_seq: int) -> float:
        from maya.hardware.cluster import cluster_for_gpu
        from maya.predict import default_params, estimated_rank
        from maya.simulator import simulate
        from maya.trace.build import rows_to_table

        table = rows_to_table(rows)
        table = table.filter(pc.not_equal(table["kind"], "collective"))
        # the final estimate warns once about ops without a model
        df = estimated_rank(table, self.gpu, host_per_op_us=self.host_per_op_us, warn_unmodelled=False)
        if self._params is None:
            self._params = default_params(self.gpu)
        result = simulate({0: df}, cluster_for_gpu(self.gpu, 1), params=self._params)
        timeline = result.timelines[0]
        records = timeline.filter(pc.is_in(timeline["seq"], pa.array([start_seq, end_seq], pa.int64())))
        ends = dict(zip(records["seq"].to_pylist(), records["end_us"].to_pylist()))
        if len(ends) < 2:
            return 0.0
        return max(ends[end_seq] - ends[start_seq], 0.0) / 1000.0
