"""Emulated storages' addresses and safetensors files: Hugging Face save_pretrained / from_pretrained."""

from __future__ import annotations

import json
import struct

import pytest
import torch
import torch.nn as nn

from maya.emulator.session import EmulationSession
from maya.emulator.state import RankConfig
from maya.hardware.gpu import load_gpu


def _session() -> EmulationSession:
    return EmulationSession(RankConfig(gpu=load_gpu("h200")))


def test_emulated_storages_have_distinct_addresses_and_views_add_their_offset():
    with _session():
        a = torch.empty(1000, device="cuda")
        b = torch.empty(1000, device="cuda")
        view = a[10:]
        assert a.data_ptr() != 0 and b.data_ptr() != 0 and a.data_ptr() != b.data_ptr()
        assert view.data_ptr() == a.data_ptr() + 10 * 4
        assert view.untyped_storage().data_ptr() == a.untyped_storage().data_ptr() == a.data_ptr()
        # Tied weights share an address, as on a GPU; untied ones of the same size do not.
        emb = nn.Embedding(100, 16).cuda()
        head = nn.Linear(16, 100, bias=False).cuda()
        assert emb.weight.data_ptr() != head.weight.data_ptr()
        head.weight = emb.weight
        assert emb.weight.data_ptr() == head.weight.data_ptr()
        # A freed block is reused, as the caching allocator reuses it.
        address = b.data_ptr()
        del b
        assert torch.empty(1000, device="cuda").data_ptr() == address
        # An empty tensor has no memory: address 0, as on a GPU.
        assert torch.empty(0, device="cuda").data_ptr() == 0
    # After the emulation the methods are PyTorch's own again.
    host = torch.ones(3)
    assert host.data_ptr() == host.untyped_storage().data_ptr() != 0


def _header(path) -> tuple[dict, int]:
    raw = path.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8:8 + length]), 8 + length


def test_safetensors_save_file_writes_a_valid_file_that_loads_back(tmp_path):
    from safetensors import safe_open

    path = tmp_path / "model.safetensors"
    with _session():
        # Imported during the emulation, as a script imports it; after it, the name keeps Maya's
        # function, which saves real tensors by safetensors' own.
        from safetensors.torch import load_file, save, save_file

        tensors = {"w": torch.empty(64, 32, device="cuda", dtype=torch.bfloat16),
                   "b": torch.empty(32, device="cuda"), "step": torch.tensor([3, 4], dtype=torch.int64)}
        save_file(tensors, path, metadata={"format": "pt"})
        header, start = _header(path)
        assert header["__metadata__"] == {"format": "pt"}
        assert header["w"]["dtype"] == "BF16" and header["w"]["shape"] == [64, 32]
        assert path.stat().st_size == start + 64 * 32 * 2 + 32 * 4 + 2 * 8
        # Emulated tensors read back as zeros; a real host tensor keeps its values.
        loaded = load_file(path)
        assert loaded["w"].dtype == torch.bfloat16 and tuple(loaded["w"].shape) == (64, 32)
        assert loaded["step"].tolist() == [3, 4]
        on_gpu = load_file(path, device="cuda")
        assert on_gpu["b"].is_cuda and tuple(on_gpu["b"].shape) == (32,)
        assert save(tensors, metadata={"format": "pt"}) == path.read_bytes()
        # safetensors' own refusals, with its messages.
        with pytest.raises(ValueError, match="non contiguous tensor: `t`"):
            save_file({"t": torch.empty(8, 4, device="cuda").t()}, tmp_path / "t.safetensors")
        shared = torch.empty(8, device="cuda")
        with pytest.raises(RuntimeError, match="Some tensors share memory"):
            save_file({"x": shared, "y": shared}, tmp_path / "s.safetensors")
    with safe_open(str(path), framework="pt") as f:
        assert sorted(f.keys()) == ["b", "step", "w"]
        assert f.get_tensor("b").abs().sum().item() == 0.0
    # Outside an emulation, real tensors are saved by safetensors itself.
    save_file({"x": torch.arange(4.0)}, tmp_path / "real.safetensors")
    assert load_file(tmp_path / "real.safetensors")["x"].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_hugging_face_save_pretrained_and_from_pretrained_round_trip(tmp_path):
    from transformers import GPT2Config, GPT2LMHeadModel

    with _session():
        model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=1000)).cuda()
        ids = torch.randint(0, 1000, (2, 16), device="cuda")
        model(ids, labels=ids).loss.backward()
        model.save_pretrained(tmp_path)  # tied lm_head and wte: saved once
        header, _ = _header(tmp_path / "model.safetensors")
        assert "transformer.wte.weight" in header and "lm_head.weight" not in header
        again = GPT2LMHeadModel.from_pretrained(tmp_path).cuda()
        assert again.lm_head.weight is again.transformer.wte.weight and again.lm_head.weight.is_cuda


def test_hugging_face_trainer_with_checkpoints_runs_under_maya_emulate(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).parent / "scripts" / "hf_trainer.py"
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "maya", "emulate", "--json", str(tmp_path / "s.json"), "--trace-dir",
         str(tmp_path / "t"), str(script), str(out)],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((tmp_path / "s.json").read_text())
    assert len(summary["iterations"]) == 4 and not summary["oom"]
    for checkpoint in ("checkpoint-2", "checkpoint-4"):
        assert {"model.safetensors", "optimizer.pt", "rng_state.pth"} <= {p.name for p in (out / checkpoint).iterdir()}
    header, _ = _header(out / "final" / "model.safetensors")
    assert header["transformer.wte.weight"]["shape"] == [1000, 128]
