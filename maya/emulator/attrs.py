"""Encoding of an op's arguments into a trace row: tensor metadata and the replayable `attrs`.

The encoding is documented in docs/trace-schema.md: tensors become `{"$t": i}` (an index into
the row's input tensors, in flattening order), dtypes `{"$dtype": name}`, devices
`{"$device": "cuda"}`, memory formats and layouts likewise.
"""

from __future__ import annotations

import torch

_DTYPE_NAMES = {d: str(d).removeprefix("torch.") for d in vars(torch).values() if isinstance(d, torch.dtype)}
_MEMORY_FORMATS = {
    torch.contiguous_format: "contiguous_format",
    torch.channels_last: "channels_last",
    torch.channels_last_3d: "channels_last_3d",
    torch.preserve_format: "preserve_format",
}


def dtype_name(dtype: torch.dtype) -> str:
    """`torch.bfloat16` -> "bfloat16"."""
    return _DTYPE_NAMES[dtype]


def tensor_meta(t: torch.Tensor) -> tuple[tuple[int, ...], str, tuple[int, ...]]:
    """(shape, dtype name, strides) of a tensor."""
    return tuple(t.shape), _DTYPE_NAMES[t.dtype], t.stride()


def encode_attrs(args: tuple, kwargs: dict) -> dict:
    """The JSON-ready argument structure of one op call (see the module docstring)."""
    counter = [0]

    def enc(v: object) -> object:
        if isinstance(v, torch.Tensor):
            i = counter[0]
            counter[0] += 1
            return {"$t": i}
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, (list, tuple)):
            return [enc(x) for x in v]
        if isinstance(v, torch.dtype):
            return {"$dtype": _DTYPE_NAMES[v]}
        if isinstance(v, torch.device):
            return {"$device": "cuda" if v.type == "maya" else v.type}
        if isinstance(v, torch.memory_format):
            return {"$memory_format": _MEMORY_FORMATS.get(v, str(v))}
        if isinstance(v, torch.layout):
            return {"$layout": str(v).removeprefix("torch.")}
        return {"$repr": repr(v)}

    encoded_args = [enc(a) for a in args]
    return {"args": encoded_args, "kwargs": {k: enc(v) for k, v in kwargs.items()}}
