"""Safetensors files of emulated tensors: Hugging Face `save_pretrained`, `Trainer`'s checkpoints.

`safetensors.torch.save_file` reads every tensor's bytes through its data pointer after a copy to
the host; an emulated tensor has no bytes, so the save failed ("invalid shape, data type, or offset
for tensor") and with it every script that ends with `model.save_pretrained(...)` or
`trainer.save_model()`. Under emulation a save that holds emulated tensors writes a valid
safetensors file (the format's 8-byte header length, its JSON header, then the data) whose emulated
tensors' bytes are left as a hole in the file, read back as zeros and taking no disk space where
the file system keeps sparse files, while the bytes of real host tensors are written as they are.
`safetensors.torch.load_file` and `from_pretrained` read the file back. The same checks as
safetensors' own come first: a non-contiguous tensor or tensors that share memory are refused with
its messages (storages are told apart by their emulated addresses, `storage_addresses.py`). As with
`torch.save` (`checkpoints.py`), the copies to the host and the disk writes are not timed.

Modules that bound `save_file` by name before the emulation started (`from safetensors.torch import
save_file as safe_save_file` in transformers) get the replacement too; one bound during an emulation
keeps it, which saves files of real tensors by the original function.
"""

from __future__ import annotations

import functools
import json
import os
import struct
import sys

import torch
from torch._subclasses.fake_tensor import FakeTensor

from maya.emulator.patcher import Patcher

_DTYPE_CODES = {
    torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
    torch.bool: "BOOL", torch.complex64: "C64",
}
for _name, _code in (("float8_e4m3fn", "F8_E4M3"), ("float8_e5m2", "F8_E5M2"), ("uint16", "U16"),
                     ("uint32", "U32"), ("uint64", "U64")):
    if hasattr(torch, _name):
        _DTYPE_CODES[getattr(torch, _name)] = _code


def _has_emulated(tensors: object) -> bool:
    return isinstance(tensors, dict) and any(isinstance(t, FakeTensor) for t in tensors.values())


def _layout(tensors: dict, metadata: dict | None) -> tuple[bytes, list[tuple[int, torch.Tensor]], int]:
    """The header's bytes (length prefix included), each tensor's offset in the data, and the data's
    length; tensors in safetensors' own order (largest alignment first, then by name)."""
    import safetensors.torch as st

    for name, tensor in tensors.items():
        if not isinstance(tensor, torch.Tensor):
            raise ValueError(f"Key `{name}` is invalid, expected torch.Tensor but received {type(tensor)}")
        if tensor.layout is not torch.strided:
            raise ValueError(f"You are trying to save a sparse tensor: `{name}` which this library does not support.")
        if tensor.dtype not in _DTYPE_CODES:
            raise ValueError(f"Tensor `{name}` has dtype {tensor.dtype}, which safetensors cannot store")
        if not tensor.is_contiguous():
            raise ValueError(
                f"You are trying to save a non contiguous tensor: `{name}` which is not allowed. It either means"
                " you are trying to save tensors which are reference of each other in which case it's recommended"
                " to save only the full tensors, and reslice at load time, or simply call `.contiguous()` on your"
                " tensor to pack it before saving.")
    shared = [names for names in st._find_shared_tensors(tensors) if len(names) > 1]
    if shared:
        raise RuntimeError(
            f"Some tensors share memory, this will lead to duplicate memory on disk and potential differences"
            f" when loading them again: {shared}.\nA potential way to correctly save your model is to use"
            " `save_model`.\nMore information at https://huggingface.co/docs/safetensors/torch_shared_tensors")
    if metadata is not None and not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise ValueError("safetensors metadata must map str to str")
    header: dict = {"__metadata__": metadata} if metadata else {}
    placed, offset = [], 0
    for name in sorted(tensors, key=lambda n: (-tensors[n].element_size(), n)):
        tensor = tensors[name]
        nbytes = tensor.numel() * tensor.element_size()
        header[name] = {"dtype": _DTYPE_CODES[tensor.dtype], "shape": list(tensor.shape),
                        "data_offsets": [offset, offset + nbytes]}
        placed.append((offset, tensor))
        offset += nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text, placed, offset


def _host_bytes(tensor: torch.Tensor) -> bytes:
    flat = tensor.detach().cpu().contiguous().reshape(-1)
    return flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""


def _save_file(original, tensors, filename, metadata=None):
    if not _has_emulated(tensors):
        return original(tensors, filename, metadata=metadata)
    head, placed, total = _layout(tensors, metadata)
    with open(os.fspath(filename), "wb") as f:
        f.write(head)
        for offset, tensor in placed:
            if not isinstance(tensor, FakeTensor) and tensor.numel():
                f.seek(len(head) + offset)
                f.write(_host_bytes(tensor))
        f.truncate(len(head) + total)  # the emulated tensors' bytes: a hole, read as zeros


def _save(original, tensors, metadata=None):
    if not _has_emulated(tensors):
        return original(tensors, metadata=metadata)
    head, placed, total = _layout(tensors, metadata)
    out = bytearray(head) + bytearray(total)
    for offset, tensor in placed:
        if not isinstance(tensor, FakeTensor) and tensor.numel():
            start = len(head) + offset
            data = _host_bytes(tensor)
            out[start:start + len(data)] = data
    return bytes(out)


def install_safetensors(patcher: Patcher) -> None:
    try:
        import safetensors.torch as st
    except ImportError:
        return
    for name, wrapper in (("save_file", _save_file), ("save", _save)):
        original = getattr(st, name, None)
        if original is None:
            continue
        replacement = functools.wraps(original)(functools.partial(wrapper, original))
        for module in list(sys.modules.values()):
            namespace = getattr(module, "__dict__", None)
            if not isinstance(namespace, dict) or module is st:
                continue
            for alias in [k for k, v in namespace.items() if v is original and isinstance(k, str)]:
                patcher.set(module, alias, replacement)
        patcher.set(st, name, replacement)
