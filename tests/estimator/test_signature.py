import numpy as np
import pyarrow as pa

from maya.estimator.signature import canonical_attrs, signature_keys
from maya.trace import TRACE_SCHEMA


def _table(**columns) -> pa.Table:
    return pa.table({name: pa.array(values, type=TRACE_SCHEMA.field(name).type) for name, values in columns.items()})


def _mm(strides_b, attrs='{"args": [{"$t": 0}, {"$t": 1}], "kwargs": {}}', dtype="float32"):
    return dict(op="aten::mm", input_shapes=[[64, 32], [32, 16]], input_dtypes=[dtype, dtype],
                input_strides=[[32, 1], strides_b], attrs=attrs)


def _rows(*rows: dict) -> pa.Table:
    return _table(**{name: [row[name] for row in rows] for name in rows[0]})


def test_keys_are_stable_and_distinguish_layout():
    table = _rows(_mm([16, 1]), _mm([1, 32]), _mm([16, 1]))
    keys = signature_keys(table)
    assert keys.dtype == np.uint64
    assert keys[0] == keys[2] and keys[0] != keys[1]
    # The same rows as a pandas DataFrame, or sliced, hash the same.
    np.testing.assert_array_equal(signature_keys(table.to_pandas()), keys)
    np.testing.assert_array_equal(signature_keys(table.slice(1)), keys[1:])


def test_attrs_key_order_device_index_and_addresses_do_not_change_the_key():
    a = _mm([16, 1], attrs='{"args": [{"$t": 0}, {"$t": 1}], "kwargs": {"device": {"$device": "cuda:0"}}}')
    b = _mm([16, 1], attrs='{"kwargs": {"device": {"$device": "cuda:3"}}, "args": [{"$t": 0}, {"$t": 1}]}')
    keys = signature_keys(_rows(a, b))
    assert keys[0] == keys[1]
    assert canonical_attrs('{"args": [{"$repr": "<Foo at 0x7f00ab>"}]}') == '{"args":[{"$repr":"<Foo>"}]}'


def test_tf32_changes_only_float32_matmul_keys():
    table = _rows(_mm([16, 1]), _mm([16, 1], dtype="bfloat16"))
    off, on = signature_keys(table, allow_tf32=False), signature_keys(table, allow_tf32=True)
    assert off[0] != on[0]
    assert off[1] == on[1]


def test_empty_and_null_tensor_lists_hash():
    table = _table(op=["cuda:synchronize", "cuda:synchronize", "aten::mm"], input_shapes=[[], None, [[2]]],
                   input_dtypes=[[], None, ["float32"]], input_strides=[[], None, [[1]]], attrs=["{}", None, "{}"])
    keys = signature_keys(table)
    assert len(set(keys.tolist())) == 3
