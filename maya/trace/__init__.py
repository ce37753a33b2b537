"""Trace: the Arrow schema of a rank's recorded events and its Parquet I/O."""

from maya.trace.schema import COLUMN_NAMES, TRACE_SCHEMA, TRACE_SCHEMA_VERSION, EventKind, Phase

__all__ = ["COLUMN_NAMES", "TRACE_SCHEMA", "TRACE_SCHEMA_VERSION", "EventKind", "Phase"]
from maya.trace.store import (  # noqa: E402
    IncompleteTraceError,
    TraceSchemaError,
    clear_trace,
    read_meta,
    read_rank_trace,
    rank_path,
    write_meta,
    write_rank_trace,
)

__all__ += [
    "IncompleteTraceError",
    "TraceSchemaError",
    "clear_trace",
    "rank_path",
    "read_meta",
    "read_rank_trace",
    "write_meta",
    "write_rank_trace",
]
