"""torch.save / torch.load under emulation: a checkpoint of shapes that loads back and resumes."""

from __future__ import annotations

import torch
import torch.nn as nn

from maya.emulator.session import EmulationSession
from maya.emulator.state import ROW_FIELDS, RankConfig
from maya.hardware.gpu import load_gpu

OP = ROW_FIELDS.index("op")


def test_save_load_and_resume_a_training_checkpoint(tmp_path):
    path = tmp_path / "ckpt.pt"
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))) as state:
        model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256)).cuda()
        opt = torch.optim.AdamW(model.parameters())
        for _ in range(2):
            model(torch.randn(4, 256, device="cuda")).sum().backward()
            opt.step()
            opt.zero_grad()
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": 2}, path)
        # Shapes only: a few kilobytes, not the 2 MiB of float32 weights and Adam moments.
        assert path.stat().st_size < 20_000

        ckpt = torch.load(path)  # no map_location: back on the (emulated) GPU, as it was saved
        weight = ckpt["model"]["0.weight"]
        assert weight.is_cuda and tuple(weight.shape) == (512, 256) and ckpt["step"] == 2
        # The optimizer's step count is a real host value and keeps it.
        assert ckpt["opt"]["state"][0]["step"].item() == 2.0
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["opt"])
        first = len(state.rows)
        model(torch.randn(4, 256, device="cuda")).sum().backward()
        opt.step()
        assert any(r[OP].startswith("aten::_foreach_") for r in state.rows[first:])

        on_host = torch.load(path, map_location="cpu", weights_only=True)
        assert on_host["model"]["2.weight"].device == torch.device("cpu")
        torch.save(model, tmp_path / "whole.pt")  # a whole module pickles too


def test_distributed_checkpoint_is_skipped_with_a_warning_and_nccl_has_a_version(tmp_path):
    import pytest
    import torch.distributed.checkpoint as dcp

    with EmulationSession(RankConfig(gpu=load_gpu("h200"))):
        state = {"model": nn.Linear(8, 8).cuda().state_dict()}
        with pytest.warns(UserWarning, match="torch.distributed.checkpoint.save is not emulated"):
            assert dcp.save(state, checkpoint_id=str(tmp_path / "step1")) is None
        with pytest.warns(UserWarning, match="async_save is not emulated"):
            assert dcp.async_save(state, checkpoint_id=str(tmp_path / "step2")).result() is None
        with pytest.warns(UserWarning, match="load is not emulated"):
            dcp.load(state, checkpoint_id=str(tmp_path / "step1"))
        assert not any(tmp_path.iterdir())
        # torch.distributed's logging asks NCCL's version, which a CPU build of torch lacks.
        assert torch.cuda.nccl.version() == (2, 28, 9)


def test_a_real_checkpoint_loads_where_map_location_says(tmp_path):
    # A file written without emulation (real host tensors), as pretrained or earlier weights are.
    path = tmp_path / "real.pt"
    torch.save({"w": torch.full((3,), 2.0), "n": 5}, path)
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))):
        on_gpu = torch.load(path, map_location="cuda")
        assert on_gpu["w"].is_cuda and on_gpu["n"] == 5
        # An emulated tensor holding a GPU copy of small host values: small results of them are computed.
        assert on_gpu["w"].sum().item() == 6.0
        as_saved = torch.load(path)  # saved from the host: stays there, with its values
        assert not as_saved["w"].is_cuda and as_saved["w"].tolist() == [2.0, 2.0, 2.0]
        on_host = torch.load(path, map_location="cpu")
        assert on_host["w"].tolist() == [2.0, 2.0, 2.0]
