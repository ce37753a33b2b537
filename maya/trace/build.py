"""Turn the emulator's row tuples into a trace table of `TRACE_SCHEMA`."""

from __future__ import annotations

import functools
import json
import logging

import pyarrow as pa

from maya.emulator.state import ROW_FIELDS
from maya.trace.schema import TRACE_SCHEMA

log = logging.getLogger(__name__)

_COLLECTIVE_FIELDS = ("group_name", "group_ranks", "group_seq", "message_bytes", "reduce_op", "peer", "async_op")


@functools.cache
def _op_cost():
    try:
        from maya.emulator.op_cost import op_cost
    except ImportError:  # op_cost lands separately; until then costs are 0
        return None
    return op_cost


def _cost(op: str, inputs: tuple, outputs: tuple, attrs_json: str | None, cache: dict) -> tuple[float, int]:
    key = (op, inputs, outputs, attrs_json)
    hit = cache.get(key)
    if hit is None:
        fn = _op_cost()
        if fn is None:
            hit = (0.0, 0)
        else:
            attrs = json.loads(attrs_json) if attrs_json else {}
            try:
                hit = fn(op, [m[0] for m in inputs], [m[1] for m in inputs], [m[0] for m in outputs], [m[1] for m in outputs], attrs)
            except Exception as e:  # a cost formula must never lose the trace
                log.warning("op_cost failed for %s: %s", op, e)
                hit = (0.0, 0)
        cache[key] = hit
    return hit


def rows_to_table(rows: list[tuple]) -> pa.Table:
    """Build the Arrow table of one rank's trace from `EmulationState.rows`."""
    idx = {name: i for i, name in enumerate(ROW_FIELDS)}
    cols: dict[str, list] = {name: [] for name in TRACE_SCHEMA.names}
    cache: dict = {}
    for r in rows:
        inputs, outputs, attrs = r[idx["inputs"]], r[idx["outputs"]], r[idx["attrs"]]
        for name in ("seq", "iteration", "kind", "op", "phase", "module", "stream", "event_id", "allocated_bytes", "reserved_bytes"):
            cols[name].append(r[idx[name]])
        cols["input_shapes"].append([list(m[0]) for m in inputs])
        cols["input_dtypes"].append([m[1] for m in inputs])
        cols["input_strides"].append([list(m[2]) for m in inputs])
        cols["output_shapes"].append([list(m[0]) for m in outputs])
        cols["output_dtypes"].append([m[1] for m in outputs])
        cols["output_strides"].append([list(m[2]) for m in outputs])
        cols["attrs"].append(attrs)
        if r[idx["kind"]] in ("kernel", "memcpy"):
            flops, nbytes = _cost(r[idx["op"]], inputs, outputs, attrs, cache)
        else:
            flops, nbytes = 0.0, 0
        cols["flops"].append(float(flops))
        cols["bytes"].append(int(nbytes))
        cols["allow_tf32"].append(r[idx["allow_tf32"]])
        coll = r[idx["collective"]]
        for j, name in enumerate(_COLLECTIVE_FIELDS):
            cols[name].append(coll[j] if coll is not None else None)
    return pa.table(cols, schema=TRACE_SCHEMA)
