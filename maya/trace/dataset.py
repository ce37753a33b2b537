"""Writing a world's traces through a Ray Dataset: one Parquet partition per rank (`rank=<r>/`)."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

import pyarrow as pa

from maya.trace.store import prepare_rank_table

PROGRESS_LOGGER = "ray.data._internal.progress"
"""Ray Data's logger that warns, once per process, that progress bars are disabled."""


def write_traces_dataset(trace_dir: str | os.PathLike, tables: Mapping[int, pa.Table]) -> None:
    """Gather the ranks' trace tables into a Ray Dataset and write it partitioned by rank.

    Each partition `TRACE_DIR/rank=<r>/` then holds that rank's rows with the trace schema (and
    its version) and no `rank` column; `maya.trace.store.read_rank_trace` reads it back. Ray Data's
    own INFO lines (execution plan, rows written) and its warning that progress bars are off show only
    when INFO logging is on (`maya -v`).
    """
    import ray.data

    blocks = []
    for rank, table in sorted(tables.items()):
        table = prepare_rank_table(table, rank)
        blocks.append(table.append_column("rank", pa.array([rank] * table.num_rows, pa.int32())))
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    # Ray Data's INFO lines, and the warning that its progress bars are off (Maya turned them off),
    # only when INFO logging is on.
    quieted = {logging.getLogger("ray.data"): logging.WARNING, logging.getLogger(PROGRESS_LOGGER): logging.ERROR}
    levels = {data_logger: data_logger.level for data_logger in quieted}
    if not logging.getLogger().isEnabledFor(logging.INFO):
        for data_logger, quiet in quieted.items():
            data_logger.setLevel(quiet)
    try:
        ray.data.from_arrow(blocks).write_parquet(str(trace_dir), partition_cols=["rank"])
    finally:
        for data_logger, level in levels.items():
            data_logger.setLevel(level)
