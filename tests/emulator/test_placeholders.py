"""The placeholder answers of host reads: "nothing is wrong" for finiteness checks, and `.item()` in
inference mode."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from maya.emulator.session import EmulationSession
from maya.emulator.state import RankConfig
from maya.hardware.gpu import load_gpu


def test_finiteness_checks_and_their_negations_answer_nothing_is_wrong():
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))):
        loss = nn.Linear(16, 1).cuda()(torch.randn(4, 16, device="cuda")).sum()
        assert bool(torch.isfinite(loss)) and bool(loss.isfinite()) and bool(torch.isfinite(loss).all())
        assert not bool(~torch.isfinite(loss)) and not bool(torch.logical_not(torch.isfinite(loss)))
        assert not bool(torch.isnan(loss)) and not bool(torch.isnan(loss).any()) and not bool(torch.isinf(loss))
        assert bool(~torch.isnan(loss)) and bool(torch.logical_not(torch.isinf(loss)))
        loss.backward()


@pytest.mark.parametrize("numel", [1000, 100_000])  # values computed on the host / a hint
def test_finiteness_answers_compute_on_into_counts_and_flags(numel):
    # DeepSpeed's overflow checks: ZeRO-1/2 sum `~(isfinite(g.amax()) & isfinite(g.amin()))` into a
    # float counter, ZeRO-3 ORs `isinf(flat).any()` into a flag, each read on the host after an
    # all-reduce; a count of NaNs is none.
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))):
        g = torch.randn(numel, device="cuda")
        invalid = torch.zeros([1], device="cuda")
        invalid += torch.isfinite(g.amax()).logical_and(torch.isfinite(g.amin())).logical_not()
        assert invalid.item() == 0.0 and not bool(invalid.bool()) and invalid.byte()[0].item() == 0
        assert torch.isnan(g).sum().item() == 0 and torch.isinf(g).count_nonzero().item() == 0
        assert torch.isposinf(g).nonzero().shape[0] == 0 and g[torch.isneginf(g)].shape[0] == 0
        assert torch.isfinite(g).sum().item() == numel and torch.isfinite(g).all().item()
        tracker = torch.zeros(1, dtype=torch.bool, device="cuda")  # ZeRO-3's: ORed in place, read as uint8
        tracker.logical_or_(torch.isinf(g).any())
        tracker.logical_or_(torch.isnan(g).any())
        assert tracker.clone().to(torch.uint8).item() == 0


def test_item_in_inference_mode_is_the_placeholder():
    # Under inference mode `item` reaches the dispatch modes undecomposed; it failed as an op whose
    # result depends on tensor values (validation loops: `total += loss.item()`).
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))):
        model = nn.Linear(16, 1).cuda().eval()
        with torch.inference_mode():
            loss = model(torch.randn(8, 16, device="cuda")).mean()
            assert loss.item() == 0.0 and torch.randn(3, device="cuda").sum().long().item() == 1
            assert torch.ones(3, device="cuda").sum().long().item() == 3  # small known values: computed


def test_inference_mode_records_the_kernels_no_grad_records():
    # Composite ops reach the modes undecomposed under inference mode; Maya decomposes them as
    # autograd does elsewhere, so an evaluation step is the same trace either way.
    from maya.emulator.state import ROW_FIELDS

    kind, op = ROW_FIELDS.index("kind"), ROW_FIELDS.index("op")
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))) as state:
        model = nn.Sequential(nn.Linear(64, 128), nn.LayerNorm(128), nn.GELU(), nn.Linear(128, 10)).cuda().eval()
        x, y = torch.randn(32, 64, device="cuda"), torch.randint(0, 10, (32,), device="cuda")
        traces = []
        for context in (torch.inference_mode, torch.no_grad):
            first = len(state.rows)
            with context():
                torch.nn.functional.cross_entropy(model(x), y)
            traces.append([r[op] for r in state.rows[first:] if r[kind] == "kernel"])
    assert traces[0] == traces[1] == ["aten::addmm", "aten::native_layer_norm", "aten::gelu", "aten::addmm",
                                      "aten::_log_softmax", "aten::nll_loss_forward"]


def test_numpy_of_an_emulated_tensor_is_an_array_of_placeholders():
    import numpy as np
    import pytest

    with EmulationSession(RankConfig(gpu=load_gpu("h200"))):
        logits = torch.randn(8, 10, device="cuda")
        preds = logits.argmax(-1).cpu().numpy()  # an evaluation loop's predictions, for numpy/scikit-learn
        assert preds.shape == (8,) and preds.dtype == np.int64 and (preds == 1).all()
        probs = np.asarray(logits.softmax(-1).cpu())
        assert probs.shape == (8, 10) and probs.dtype == np.float32 and (probs == 0).all()
        with pytest.raises(TypeError, match="BFloat16"):  # as PyTorch: numpy has no bfloat16
            logits.bfloat16().cpu().numpy()
        assert torch.ones(3).numpy().tolist() == [1.0, 1.0, 1.0]  # a real host tensor keeps its values


def test_a_loop_waiting_for_an_unknown_value_is_stopped_with_a_message(monkeypatch):
    import maya.emulator.recorder as recorder

    monkeypatch.setattr(recorder, "PLACEHOLDER_READS_MAX", 1000)
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))):
        x = torch.randn(4, device="cuda")
        with pytest.raises(RuntimeError, match="after 1,000 reads of GPU values it does not compute"):
            while not (x > 10).any().item():  # never True under emulation: the placeholder is False
                x = torch.randn(4, device="cuda")
        # An optimizer step starts a new count: a training loop's loss.item() never trips it.
        model = torch.nn.Linear(4, 4).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        opt.step()
        for _ in range(3):
            for _ in range(900):
                model(x).sum().item()
            opt.step()

