"""`TensorColumn`: a trace's `list<list<int64>>` shape or stride column as dense numpy arrays.

A trace row lists one shape (or stride) per tensor argument. Working row by row in Python is far too
slow for a million-row trace, so the column is unpacked once from its Arrow buffers into a
`[tensors, MAX_RANK]` matrix, right-aligned (the last dim of every tensor sits in the last column)
and padded with `pad` on the left.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from maya.trace.schema import TRACE_SCHEMA

MAX_RANK = 8
"""Dims kept per tensor; higher-rank tensors keep their last MAX_RANK dims."""


def list_parts(array: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """Offsets (rebased to start at 0, nulls as empty lists) and the matching slice of child values."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    offsets = np.asarray(array.offsets, dtype=np.int64)
    values = array.values.slice(offsets[0], offsets[-1] - offsets[0])
    offsets = offsets - offsets[0]
    if array.null_count:
        # A null list may still own a segment of the child array: drop it and count the row empty.
        null_rows = np.asarray(array.is_null(), dtype=bool)
        lengths = np.diff(offsets)
        owner = np.repeat(np.arange(len(lengths)), lengths)
        values = values.filter(pa.array(~null_rows[owner]))
        lengths[null_rows] = 0
        offsets = np.concatenate([[0], np.cumsum(lengths)])
    return offsets, values


@dataclass(frozen=True, kw_only=True, slots=True)
class TensorColumn:
    """Every tensor of every row of one shape/stride column, as right-aligned padded dims."""

    row_offsets: np.ndarray
    """int64 [rows + 1]: tensors of row r are `dims[row_offsets[r]:row_offsets[r + 1]]`."""
    dims: np.ndarray
    """int64 [tensors, MAX_RANK]: right-aligned dims (or strides), left-padded with `pad`."""
    rank: np.ndarray
    """int64 [tensors]: the tensor's number of dims (not clipped to MAX_RANK)."""

    @classmethod
    def from_arrow(cls, array: pa.Array | pa.ChunkedArray, *, pad: int) -> TensorColumn:
        """Unpack a `list<list<int64>>` Arrow column; `pad` fills missing leading dims (1 for shapes)."""
        row_offsets, tensors = list_parts(array)
        inner_offsets, values = list_parts(tensors)
        flat = np.asarray(values.fill_null(0), dtype=np.int64)
        rank = np.diff(inner_offsets)
        dims = np.full((len(rank), MAX_RANK), pad, dtype=np.int64)
        ends = inner_offsets[1:]
        for j in range(MAX_RANK):
            has = rank > j
            dims[has, MAX_RANK - 1 - j] = flat[ends[has] - 1 - j]
        return cls(row_offsets=row_offsets, dims=dims, rank=rank)

    @property
    def count(self) -> np.ndarray:
        """int64 [rows]: number of tensors in each row."""
        return np.diff(self.row_offsets)

    def tensor(self, index: np.ndarray | int, *, pad: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The `index`-th tensor of each row: (dims [rows, MAX_RANK], rank [rows], present [rows]).

        `index` may differ per row. Rows with fewer tensors get `pad` dims, rank 0 and present False.
        """
        rows = len(self.row_offsets) - 1
        index = np.broadcast_to(np.asarray(index, dtype=np.int64), (rows,))
        present = self.count > index
        at = np.where(present, self.row_offsets[:-1] + index, 0)
        if len(self.rank) == 0:
            return np.full((rows, MAX_RANK), pad, dtype=np.int64), np.zeros(rows, np.int64), present
        dims = np.where(present[:, None], self.dims[at], pad)
        rank = np.where(present, self.rank[at], 0)
        return dims, rank, present

    def row_sum(self, per_tensor: np.ndarray) -> np.ndarray:
        """Sum a per-tensor quantity over each row's tensors."""
        cumulative = np.concatenate([[0], np.cumsum(per_tensor)])
        return cumulative[self.row_offsets[1:]] - cumulative[self.row_offsets[:-1]]

    def row_max(self, per_tensor: np.ndarray) -> np.ndarray:
        """Maximum of a per-tensor quantity over each row's tensors (0 for rows without tensors)."""
        out = np.zeros(len(self.row_offsets) - 1, dtype=per_tensor.dtype)
        has = self.count > 0
        if has.any():
            out[has] = np.maximum.reduceat(per_tensor, self.row_offsets[:-1][has])
        return out


def as_arrow(data: pa.Table | pd.DataFrame, columns: Iterable[str]) -> pa.Table:
    """The named columns of a trace or profile as an Arrow table, typed as `TRACE_SCHEMA` types them.

    Pandas batches (from Ray Data) hold list columns as object arrays of lists or numpy arrays;
    they are converted with the schema's types so that empty lists keep their type.
    """
    if isinstance(data, pa.Table):
        return data.select([c for c in columns if c in data.column_names])
    columns = [c for c in columns if c in data.columns]
    arrays = []
    for name in columns:
        kind = TRACE_SCHEMA.field(name).type if name in TRACE_SCHEMA.names else None
        arrays.append(pa.array(data[name].to_numpy(), type=kind, from_pandas=True))
    return pa.Table.from_arrays(arrays, names=columns)
