"""Reading and writing traces as Parquet: one file per rank under `TRACE_DIR/rank=<r>/`.

A trace directory is complete only when `TRACE_DIR/meta.json` exists; it is written last, after
every rank's file has been renamed into place, so an interrupted run never looks complete.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from maya.trace.schema import TRACE_SCHEMA, TRACE_SCHEMA_VERSION

META_FILE = "meta.json"
_VERSION_KEY = b"maya.trace_schema_version"


class TraceSchemaError(ValueError):
    """A trace was written with a schema version this Maya cannot read."""


class IncompleteTraceError(FileNotFoundError):
    """A trace directory has no meta.json: the run that wrote it did not finish."""


def rank_path(trace_dir: str | os.PathLike, rank: int) -> Path:
    """Path of one rank's Parquet file inside a trace directory."""
    return Path(trace_dir) / f"rank={rank}" / "trace.parquet"


def prepare_rank_table(table: pa.Table, rank: int) -> pa.Table:
    """Cast a rank's table to the trace schema and stamp the schema version and rank on it."""
    return table.cast(TRACE_SCHEMA).replace_schema_metadata(
        {_VERSION_KEY: str(TRACE_SCHEMA_VERSION).encode(), b"maya.rank": str(rank).encode()}
    )


def write_rank_trace(trace_dir: str | os.PathLike, rank: int, table: pa.Table) -> Path:
    """Write one rank's trace atomically (temporary file, then rename)."""
    table = prepare_rank_table(table, rank)
    path = rank_path(trace_dir, rank)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".parquet.tmp")
    pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, path)
    return path


def clear_trace(trace_dir: str | os.PathLike) -> bool:
    """Remove the trace an earlier run left in `trace_dir` (its meta.json first, then each rank
    partition's Parquet files, and the partitions left empty), so that a new run's trace is never
    read together with the old one's (a Ray Dataset write adds files beside those already in a
    partition) and a new run that fails leaves the directory incomplete, not the old run's. Other
    files stay. Returns whether there was anything to remove."""
    root = Path(trace_dir)
    found = False
    meta = root / META_FILE
    if meta.exists():
        meta.unlink()
        found = True
    for partition in sorted(root.glob("rank=*")) if root.is_dir() else ():
        if not (partition.is_dir() and partition.name[len("rank="):].isdigit()):
            continue
        for part in list(partition.glob("*.parquet")) + list(partition.glob("*.parquet.tmp")):
            part.unlink()
            found = True
        if not any(partition.iterdir()):
            partition.rmdir()
    return found


def write_meta(trace_dir: str | os.PathLike, meta: dict[str, Any]) -> None:
    """Write meta.json last: its presence marks the trace directory complete."""
    path = Path(trace_dir) / META_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"trace_schema_version": TRACE_SCHEMA_VERSION, **meta}, indent=2))
    os.replace(tmp, path)


def read_meta(trace_dir: str | os.PathLike) -> dict[str, Any]:
    """Read meta.json, checking that the directory is complete and of a readable version."""
    path = Path(trace_dir) / META_FILE
    if not path.exists():
        raise IncompleteTraceError(
            f"{trace_dir} is not a complete Maya trace: {META_FILE} is missing "
            "(the emulation that wrote it failed or was interrupted)"
        )
    meta = json.loads(path.read_text())
    _check_version(meta.get("trace_schema_version"), str(path))
    return meta


def read_rank_trace(trace_dir: str | os.PathLike, rank: int) -> pa.Table:
    """Read one rank's trace table, checking its schema version."""
    path = rank_path(trace_dir, rank)
    if not path.exists():  # written through a Ray Dataset: the partition's files, in order
        parts = sorted(path.parent.glob("*.parquet"))
        if not parts:
            raise FileNotFoundError(f"{trace_dir} has no trace for rank {rank} ({path.parent} is missing or empty)")
        tables = [pq.read_table(p) for p in parts]
        table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
        path = parts[0]
    else:
        table = pq.read_table(path)
    raw = (table.schema.metadata or {}).get(_VERSION_KEY)
    _check_version(int(raw) if raw is not None else None, str(path))
    return table


def _check_version(found: int | None, where: str) -> None:
    if found != TRACE_SCHEMA_VERSION:
        raise TraceSchemaError(
            f"{where} was written with trace schema version {found}, "
            f"but this Maya reads version {TRACE_SCHEMA_VERSION}; re-run `maya emulate` to regenerate it"
        )
