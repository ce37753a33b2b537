"""`ExactTable`: measured GPU time of every profiled op signature, looked up by signature key.

A profile row is a measurement of exactly one signature, so when a trace op's key is in the table
its measured median is used as its time. `fit_models` writes the table as
`<models_dir>/exact_durations.parquet` from every profile row it reads (family files and
`exact.parquet`; not for the shipped H200 models: `fit_models`' `exact_table`); duplicate measurements
of one signature keep the median of their medians. `maya profile --trace` tables load here too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from maya.estimator.signature import signature_keys

EXACT_FILE = "exact_durations.parquet"
"""File name of the table inside a models directory."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ExactTable:
    """Sorted signature keys and their measured durations."""

    keys: np.ndarray
    """uint64 [n], sorted ascending, unique."""
    duration_us: np.ndarray
    """float64 [n]: median measured GPU time of each signature, in microseconds (> 0)."""

    def __post_init__(self) -> None:
        if len(self.keys) != len(self.duration_us):
            raise ValueError(f"{len(self.keys)} keys but {len(self.duration_us)} durations")

    @classmethod
    def from_profiles(cls, profiles: pa.Table | pd.DataFrame) -> ExactTable:
        """Build from profile rows (trace-row columns plus `duration_us`, optional `allow_tf32`)."""
        keys = signature_keys(profiles)
        durations = np.asarray(
            profiles.column("duration_us") if isinstance(profiles, pa.Table) else profiles["duration_us"],
            dtype=np.float64,
        )
        valid = np.isfinite(durations) & (durations > 0)
        frame = pd.DataFrame({"key": keys[valid], "duration_us": durations[valid]})
        medians = frame.groupby("key", sort=True)["duration_us"].median()
        return cls(keys=medians.index.to_numpy(np.uint64), duration_us=medians.to_numpy(np.float64))

    @classmethod
    def load(cls, path: str | os.PathLike) -> ExactTable:
        """Read a table written by `save`, or build one from a profile Parquet file or directory."""
        path = Path(path)
        if path.is_dir():
            if (path / EXACT_FILE).exists():
                return cls.load(path / EXACT_FILE)
            files = sorted(path.glob("*.parquet"))
            return cls.from_profiles(pa.concat_tables([pq.read_table(f) for f in files], promote_options="default"))
        table = pq.read_table(path)
        if table.column_names == ["key", "duration_us"]:
            return cls(keys=table.column("key").to_numpy(), duration_us=table.column("duration_us").to_numpy())
        return cls.from_profiles(table)

    def save(self, path: str | os.PathLike) -> Path:
        """Write the table as Parquet (`key` uint64, `duration_us` float64)."""
        path = Path(path)
        pq.write_table(pa.table({"key": pa.array(self.keys, pa.uint64()), "duration_us": self.duration_us}), path)
        return path

    def overlaid(self, other: ExactTable | None) -> ExactTable:
        """This table's entries, with `other`'s filling the signatures this one lacks."""
        if other is None or not len(other.keys):
            return self
        missing = np.isnan(self.lookup(other.keys))
        keys = np.concatenate([self.keys, other.keys[missing]])
        order = np.argsort(keys, kind="stable")
        return ExactTable(keys=keys[order], duration_us=np.concatenate([self.duration_us, other.duration_us[missing]])[order])

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        """Measured duration (us) of each key, NaN where the signature was never profiled."""
        keys = np.asarray(keys, dtype=np.uint64)
        if not len(self.keys):
            return np.full(len(keys), np.nan)
        at = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        return np.where(self.keys[at] == keys, self.duration_us[at], np.nan)
