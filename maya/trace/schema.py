"""The Arrow schema of one rank's trace, version `TRACE_SCHEMA_VERSION`.

A trace is one table per emulated rank, one row per event, in issue order. Every row is one of the
`EventKind`s below. Columns that do not apply to a kind hold their null/empty value. The full
description, with an example, is in docs/trace-schema.md; change both together and bump the version.
"""

from __future__ import annotations

import pyarrow as pa

from maya.emulator.events import EventKind, Phase

TRACE_SCHEMA_VERSION = 2
"""Bumped whenever a column is added, removed or changes meaning."""

__all__ = ["COLUMN_NAMES", "TRACE_SCHEMA", "TRACE_SCHEMA_VERSION", "EventKind", "Phase"]


_shape_list = pa.list_(pa.list_(pa.int64()))

TRACE_SCHEMA = pa.schema(
    [
        pa.field("seq", pa.int64(), nullable=False),  # 0, 1, 2, ... in host issue order
        pa.field("iteration", pa.int32(), nullable=False),  # iteration index the event belongs to
        pa.field("kind", pa.string(), nullable=False),  # EventKind value
        pa.field("op", pa.string(), nullable=False),  # "aten::mm", "nccl:all_reduce", "cuda:synchronize"
        pa.field("phase", pa.string(), nullable=False),  # Phase value
        pa.field("module", pa.string(), nullable=False),  # module path, e.g. "blocks.3.attn.q"; "" at top level
        pa.field("stream", pa.int32(), nullable=False),  # emulated stream id; 0 is the default stream
        pa.field("event_id", pa.int64(), nullable=False),  # event id for EVENT_RECORD/STREAM_WAIT/SYNC, else -1
        pa.field("input_shapes", _shape_list),
        pa.field("input_dtypes", pa.list_(pa.string())),  # torch dtype names without "torch."
        pa.field("input_strides", _shape_list),
        pa.field("output_shapes", _shape_list),
        pa.field("output_dtypes", pa.list_(pa.string())),
        pa.field("output_strides", _shape_list),
        pa.field("attrs", pa.string()),  # JSON object of the op's non-tensor arguments that matter for time
        pa.field("flops", pa.float64(), nullable=False),  # floating-point operations (a multiply-add is 2)
        pa.field("bytes", pa.int64(), nullable=False),  # bytes read plus bytes written in device memory
        pa.field("allocated_bytes", pa.int64(), nullable=False),  # allocator's allocated bytes after the event
        pa.field("reserved_bytes", pa.int64(), nullable=False),  # allocator's reserved bytes after the event
        # Collective columns (kind == collective), null otherwise.
        pa.field("group_name", pa.string()),  # process group name
        pa.field("group_ranks", pa.list_(pa.int32())),  # global ranks of the group, in group-rank order
        pa.field("group_seq", pa.int64()),  # per-group sequence number of this call, from 0
        pa.field("message_bytes", pa.int64()),  # NCCL message size (nccl-tests "size") in bytes
        pa.field("reduce_op", pa.string()),  # "sum", "avg", ... for reductions
        pa.field("peer", pa.int32()),  # global peer rank of send/recv, else null
        pa.field("async_op", pa.bool_()),  # issued with async_op=True (waited later)
        # TF32 permission in force for a float32 matmul (torch.backends.cuda.matmul.fp32_precision, or
        # allow_tf32 in PyTorch before 2.9), convolution or cuDNN RNN (torch.backends.cudnn.conv / .rnn
        # fp32_precision, or cudnn.allow_tf32) when it was issued; null for other ops.
        pa.field("allow_tf32", pa.bool_()),
    ]
)

COLUMN_NAMES = tuple(TRACE_SCHEMA.names)
