"""Op signature keys: a stable 64-bit hash of everything that decides one op's GPU time.

The key covers the op name, every input tensor's shape, dtype and strides, the op's non-tensor
arguments (`attrs`, whose tensors are already abstracted to `{"$t": i}` indices) and, for float32
matmul/conv/attention only, whether TF32 is allowed. Two rows with the same key run the same kernel,
so a profiled signature is an exact answer for every trace row that shares its key.

Keys are computed column-wise from the Arrow buffers (splitmix64 over flattened values, summed per
list with position salts), so a million-row trace hashes in well under a second; strings are hashed
once per distinct value with BLAKE2b. Keys are identical across processes, machines and runs.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from maya.emulator.attrs import RUN_MARKS
from maya.estimator.families import TF32_FAMILIES, families_of
from maya.estimator.tensor_columns import as_arrow, list_parts

SIGNATURE_COLUMNS = ("op", "input_shapes", "input_dtypes", "input_strides", "attrs")
"""Trace columns that enter the key, in this order (plus `allow_tf32` where present)."""

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_NULL = np.uint64(0x5A17_0F_D00D_BEEF)
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser (Steele et al., "Fast splittable pseudorandom number generators", 2014)."""
    with np.errstate(over="ignore"):
        x = x + _GOLDEN
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def _blake(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


@functools.lru_cache(maxsize=65536)
def canonical_attrs(attrs: str) -> str:
    """attrs JSON with sorted keys, devices reduced to their type, object addresses and the
    marks of how often its shape recurs (`RUN_MARKS`) removed.

    `cuda:0` and `cuda:3` run the same kernel, and a `$repr` such as `<object at 0x7f..>` differs
    per process, so neither may change the key; nor may the marks, which say how often the shape
    recurs, not what the kernel computes.
    """

    def clean(value):
        if isinstance(value, dict):
            if "$device" in value and isinstance(value["$device"], str):
                return {"$device": value["$device"].split(":", 1)[0]}
            if "$repr" in value and isinstance(value["$repr"], str):
                return {"$repr": _ADDRESS.sub("", value["$repr"])}
            return {key: clean(item) for key, item in value.items()}
        if isinstance(value, list):
            return [clean(item) for item in value]
        return value

    try:
        value = clean(json.loads(attrs))
        if isinstance(value, dict):
            for mark in RUN_MARKS:
                value.pop(mark, None)
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    except (json.JSONDecodeError, TypeError):
        return attrs


def _hash_strings(array: pa.Array, *, canonical: bool = False) -> np.ndarray:
    encoded = pc.dictionary_encode(array.fill_null(""))
    dictionary = encoded.dictionary.to_pylist()
    if canonical:
        dictionary = [canonical_attrs(text) for text in dictionary]
    table = np.array([_blake(text) for text in dictionary] + [0], dtype=np.uint64)
    return table[np.asarray(encoded.indices, dtype=np.int64)]


def _hash_array(array: pa.Array, *, canonical: bool = False) -> np.ndarray:
    """One uint64 per element of an int/bool/string array or (nested) list array."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    kind = array.type
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        offsets, values = list_parts(array)
        lengths = np.diff(offsets)
        child = _hash_array(values)
        position = np.arange(len(child), dtype=np.int64) - np.repeat(offsets[:-1], lengths)
        salted = _mix(child ^ _mix(position.astype(np.uint64)))
        with np.errstate(over="ignore"):
            total = np.concatenate([[np.uint64(0)], np.cumsum(salted, dtype=np.uint64)])
            summed = total[offsets[1:]] - total[offsets[:-1]]
        hashed = _mix(summed ^ _mix(lengths.astype(np.uint64) + _GOLDEN))
    elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
        hashed = _hash_strings(array, canonical=canonical)
    else:
        hashed = _mix(np.asarray(array.cast(pa.int64()).fill_null(0), dtype=np.int64).view(np.uint64))
    if array.null_count:
        hashed = np.where(np.asarray(array.is_null(), dtype=bool), _NULL, hashed)
    return hashed


def _uses_tf32(table: pa.Table) -> np.ndarray:
    """Rows whose time depends on the TF32 setting: float32 inputs to a matmul/conv/attention op."""
    tf32_family = np.isin(families_of(table.column("op").to_numpy()), list(TF32_FAMILIES))
    if not tf32_family.any():
        return tf32_family
    offsets, dtypes = list_parts(table.column("input_dtypes"))
    is_float32 = np.asarray(pc.equal(dtypes, "float32").fill_null(False), dtype=np.int64)
    total = np.concatenate([[0], np.cumsum(is_float32)])
    return tf32_family & ((total[offsets[1:]] - total[offsets[:-1]]) > 0)


def signature_keys(data: pa.Table | pd.DataFrame, *, allow_tf32: bool = False) -> np.ndarray:
    """Signature key of every row, as a uint64 array.

    Args:
        data: trace or profile rows with the `SIGNATURE_COLUMNS`.
        allow_tf32: TF32 setting for rows without an `allow_tf32` column (traces do not record it;
            PyTorch's default for matmul is False).

    Returns:
        uint64 array, one key per row. Equal keys mean equal op, tensor signature, attrs and
        (where it matters) TF32 setting.
    """
    table = as_arrow(data, (*SIGNATURE_COLUMNS, "allow_tf32"))
    missing = [c for c in SIGNATURE_COLUMNS if c not in table.column_names]
    if missing:
        raise ValueError(f"signature_keys needs columns {SIGNATURE_COLUMNS}; missing {missing}")
    key = np.zeros(table.num_rows, dtype=np.uint64)
    for index, name in enumerate(SIGNATURE_COLUMNS):
        column = _hash_array(table.column(name), canonical=(name == "attrs"))
        key = _mix(key ^ _mix(column + np.uint64(index)))
    if "allow_tf32" in table.column_names:
        tf32 = np.asarray(table.column("allow_tf32").fill_null(allow_tf32), dtype=bool)
    else:
        tf32 = np.full(table.num_rows, allow_tf32)
    tf32 &= _uses_tf32(table)
    return _mix(key ^ tf32.astype(np.uint64))
