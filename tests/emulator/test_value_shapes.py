"""Sizes read from values: repeat_interleave with tensor repeats, and unique."""

from __future__ import annotations

import pytest
import torch

from maya.emulator.session import EmulationSession
from maya.emulator.state import ROW_FIELDS, RankConfig
from maya.hardware.gpu import load_gpu

KIND, OP = (ROW_FIELDS.index(f) for f in ("kind", "op"))


def test_sizes_from_copied_host_values_hints_and_the_upper_bound():
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))) as state:
        x = torch.randn(4, 2, device="cuda", requires_grad=True)
        first = len(state.rows)
        # Repeats copied from Python data: their values are known, 1 + 2 + 3 + 4 rows.
        repeats = torch.tensor([1, 2, 3, 4], device="cuda")
        y = torch.repeat_interleave(x, repeats, dim=0)
        assert tuple(y.shape) == (10, 2)
        rows = state.rows[first:]
        # Written on the GPU by an op on known values: computed, and still known.
        repeats.add_(1)
        assert tuple(torch.repeat_interleave(x, repeats, dim=0).shape) == (14, 2)
        # Written with unknown values, they are no longer known: the op is then named.
        repeats.mul_(torch.randn(4, device="cuda").long())
        with pytest.raises(RuntimeError, match="Maya cannot emulate aten::repeat_interleave.Tensor"):
            torch.repeat_interleave(x, repeats, dim=0)
        # Top-2 routing of 64 tokens over 8 experts: a bincount of 128 picks, repeated back to 128 rows,
        # and all 8 experts among the unique picks.
        picks = torch.randn(64, 8, device="cuda").topk(2, dim=-1).indices.flatten()
        tokens = torch.repeat_interleave(torch.arange(8, device="cuda"), torch.bincount(picks, minlength=8))
        experts, inverse, counts = torch.unique(picks, return_inverse=True, return_counts=True)
        assert tuple(tokens.shape) == (128,)
        assert (tuple(experts.shape), tuple(inverse.shape), tuple(counts.shape)) == ((8,), (128,), (8,))
        # Nothing known: every element distinct (the upper bound); consecutive runs of known values: exact.
        assert tuple(torch.unique(torch.randint(0, 5, (100,), device="cuda")).shape) == (100,)
        runs = torch.unique_consecutive(torch.tensor([1, 1, 2, 2, 3], device="cuda"), return_counts=True)
        assert tuple(runs[0].shape) == tuple(runs[1].shape) == (3,)
        y.sum().backward()
        assert tuple(x.grad.shape) == (4, 2)
        # .item() of a GPU copy of a Python number is that number, until the GPU writes to it with
        # values Maya does not know (ops on known values are computed).
        limit = torch.tensor(7, device="cuda")
        assert limit.item() == 7 and torch.tensor(0.25, device="cuda").item() == 0.25
        limit.mul_(2)
        assert limit.item() == 14
        limit.add_(torch.randn((), device="cuda").long())
        assert limit.item() == 1  # the integer placeholder
    # The size is read on the host: a sync after the kernel, as on the GPU.
    ops = [(r[KIND], r[OP]) for r in rows]
    at = ops.index(("kernel", "aten::repeat_interleave.Tensor"))
    assert ops[at + 1] == ("sync", "cuda:device_to_host")


def test_unique_along_a_dimension_takes_every_slice_as_distinct():
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))) as state:
        x = torch.randint(0, 5, (100, 3), device="cuda")
        first = len(state.rows)
        rows, inverse, counts = torch.unique(x, dim=0, return_inverse=True, return_counts=True)
        assert (tuple(rows.shape), tuple(inverse.shape), tuple(counts.shape)) == ((100, 3), (100,), (100,))
        assert tuple(torch.unique(x, dim=-1, sorted=False).shape) == (100, 3)
        columns, column_counts = torch.unique_consecutive(x, dim=1, return_counts=True)
        assert (tuple(columns.shape), tuple(column_counts.shape)) == ((100, 3), (3,))
        # Along the only dimension of routing indices: as over their elements, every choice once.
        picks = torch.randn(64, 4, device="cuda").argmax(-1)
        assert tuple(torch.unique(picks, dim=0).shape) == (4,)
        ops = [(r[KIND], r[OP]) for r in state.rows[first:]]
    at = ops.index(("kernel", "aten::unique_dim"))
    assert ops[at + 1] == ("sync", "cuda:device_to_host")


def test_small_values_made_on_the_gpu_are_computed_and_forgotten_when_written():
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))):
        # Hugging Face generate's loop: unfinished = ones & ~done, stop when its max is 0.
        unfinished = torch.ones(4, dtype=torch.long, device="cuda")
        running = unfinished & ~torch.full((4,), False, device="cuda", dtype=torch.bool)
        assert bool(running.max() == 0) is False
        stopped = unfinished & ~torch.full((4,), True, device="cuda", dtype=torch.bool)
        assert bool(stopped.max() == 0) is True
        # No element of unknown values is among given ones (no sampled token ends a sequence).
        tokens = torch.randn(4, 10, device="cuda").argmax(-1)
        assert not torch.isin(tokens, torch.tensor([2], device="cuda")).any().item()
        # Factories and arithmetic on known values; in place too.
        steps = torch.arange(5, device="cuda")
        assert (steps * 2).sum().item() == 20 and torch.full((), 65536.0, device="cuda").item() == 65536.0
        steps.add_(1)
        assert steps.sum().item() == 15
        assert steps.cpu().numpy().tolist() == steps.tolist() == [1, 2, 3, 4, 5]
        # A write through a view forgets the values of everything sharing its storage.
        x = torch.tensor([1, 2, 3], device="cuda")
        view = x[1:]
        x[0] = 10
        assert x.sum().item() == 1 and view.sum().item() == 1  # the integer placeholder
        # Random values stay unknown; large results are not computed.
        assert torch.randint(5, 6, (3,), device="cuda").sum().item() == 1
        assert torch.ones(1 << 13, device="cuda").sum().item() == 0.0  # the float placeholder


def test_hugging_face_generate_runs_to_its_length_limit():
    from transformers import LlamaConfig, LlamaForCausalLM

    with EmulationSession(RankConfig(gpu=load_gpu("h200"))):
        config = LlamaConfig(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                             num_attention_heads=4, num_key_value_heads=2, pad_token_id=0, eos_token_id=2)
        model = LlamaForCausalLM(config).cuda().eval()
        prompt = torch.randint(3, 1000, (2, 8), device="cuda")
        with torch.no_grad():
            out = model.generate(prompt, max_new_tokens=12, do_sample=True, top_p=0.9)
        assert tuple(out.shape) == (2, 20)


def test_grad_scaler_scale_grows_as_with_finite_gradients():
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))):
        model = torch.nn.Linear(64, 64).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler("cuda", growth_interval=2)
        scales = []
        for _ in range(5):
            with torch.autocast("cuda", dtype=torch.float16):
                loss = model(torch.randn(8, 64, device="cuda")).float().pow(2).mean()
            scaler.scale(loss).backward()
            scaler.unscale_(opt)  # finds no inf or NaN: the "nothing is wrong" placeholder
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
            scales.append(scaler.get_scale())
    assert scales == [65536.0, 131072.0, 131072.0, 262144.0, 262144.0]


def test_hugging_face_beam_search_runs_to_its_length_limit():
    # Its loop goes on while a beam could beat the worst finished one: under emulation no beam
    # finishes early (no token is an end-of-sequence token), so it decodes to max_new_tokens, and the
    # output is cut to the generated length that its beam indices count (every position).
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.generation.utils import GenerationMixin

    original = GenerationMixin.__dict__["_beam_search_has_unfinished_sequences"]
    config = LlamaConfig(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=2, pad_token_id=0, eos_token_id=2)
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))) as state:
        model = LlamaForCausalLM(config).cuda().eval()
        prompt = torch.randint(3, 1000, (2, 8), device="cuda")
        with torch.no_grad():
            out = model.generate(prompt, max_new_tokens=5, num_beams=3, do_sample=False)
        assert tuple(out.shape) == (2, 13)
        module = ROW_FIELDS.index("module")
        lm_heads = [r for r in state.rows if r[OP] == "aten::mm" and r[module] == "lm_head"]
        assert len(lm_heads) == 5  # one decoding step per new token, as on a GPU
    assert GenerationMixin.__dict__["_beam_search_has_unfinished_sequences"] is original  # put back


def test_counts_of_unknown_masks_count_every_element_and_lengths_add_up():
    # A mask Maya knows nothing about selects every element (`nonzero`), so its count is its size;
    # the largest of equal expected values is that value, and a Python number shifts it.
    with EmulationSession(RankConfig(gpu=load_gpu("h200"))):
        positions = torch.randint(-1, 3, (6, 5), device="cuda")  # random: unknown values
        lengths = (positions + 1).bool().sum(dim=1)
        assert lengths[0].item() == 5 and lengths.max().item() == 5 and (8 + lengths.max()).item() == 13
        assert torch.count_nonzero(positions).item() == 30
        assert (lengths.max() - 2).item() == 3


def test_ops_on_sizes_a_routing_chose_are_marked_data_dependent():
    """An expert's tokens, gathered with torch.where on top-k routing, change in number from step to step
    on a GPU: the expert's GEMMs (forward and backward) carry the mark, the layers of fixed shape and an
    in-place update of a fixed-shape tensor do not, and a selection of known values is not marked."""
    import json

    attrs_at = ROW_FIELDS.index("attrs")

    def marked(row) -> bool:
        return bool(row[attrs_at]) and json.loads(row[attrs_at]).get("data_dependent_shape", False)

    with EmulationSession(RankConfig(gpu=load_gpu("h200"))) as state:
        x = torch.randn(64, 16, device="cuda", requires_grad=True)
        router = torch.nn.Linear(16, 4, device="cuda")
        expert = torch.nn.Linear(16, 16, device="cuda")
        dense = torch.nn.Linear(16, 16, device="cuda")
        first = len(state.rows)
        selected = router(x).topk(2, dim=-1).indices
        mask = torch.nn.functional.one_hot(selected, 4).permute(2, 1, 0)
        out = torch.zeros_like(x)
        slot, token = torch.where(mask[0])
        assert tuple(token.shape) == (32,)  # 64 tokens x top-2 / 4 experts
        y = expert(x[token])
        out.index_add_(0, token, y)
        loss = dense(out).sum()
        loss.backward()
        # Known values select the same rows every step: not marked.
        fixed = torch.tensor([True, False] * 32, device="cuda")
        known_first = len(state.rows)
        expert(x[fixed]).sum()
        known = state.rows[known_first:]
        rows = state.rows[first:known_first]
    gemms = [(r[OP], marked(r)) for r in rows if r[KIND] == "kernel" and r[OP] in ("aten::addmm", "aten::mm")]
    # Fixed: the router's and the dense layer's forward, the dense layer's two backward GEMMs (no gradient
    # reaches the router through top-k's indices). Marked: the expert's forward and its two backward GEMMs.
    assert [m for _, m in gemms] == [False, True, False, False, False, True, True], gemms
    index_add = next(r for r in rows if r[OP] == "aten::index_add_")
    assert marked(index_add)  # its index has the routed size
    later = [r for r in rows if r[OP] == "aten::mm" and not marked(r)]
    assert later, "the dense layer's backward GEMMs, on out's fixed shape, must stay unmarked"
    assert not any(marked(r) for r in known)


def test_a_shape_run_for_the_first_time_is_marked_with_the_figure_it_pays():
    """cuBLAS and cuDNN keep what they chose per shape: only a GEMM's first run on a shape is marked, a
    routed size is new at every routing, and within one routing a second GEMM of the same shape (an
    expert's w3 after its w1) is not; a weight gradient over the routed tokens reduces over them."""
    import json

    attrs_at = ROW_FIELDS.index("attrs")

    def mark(row):
        return json.loads(row[attrs_at]).get("new_shape") if row[attrs_at] else None

    with EmulationSession(RankConfig(gpu=load_gpu("h200"))) as state:
        x = torch.randn(64, 16, device="cuda", dtype=torch.bfloat16)
        w1 = torch.randn(32, 16, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        w3 = torch.randn(32, 16, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        first = len(state.rows)
        for _ in range(2):
            torch.mm(x, x.t())  # the same shape twice: marked once
        static = [mark(r) for r in state.rows[first:] if r[OP] == "aten::mm"]
        routed = []
        for _ in range(2):  # two steps' routing of the same tokens
            selected = torch.randn(64, 4, device="cuda").topk(2, dim=-1).indices
            _, token = torch.where(torch.nn.functional.one_hot(selected, 4).permute(2, 1, 0)[0])
            at = len(state.rows)
            h = torch.nn.functional.linear(x[token], w1) * torch.nn.functional.linear(x[token], w3)
            h.sum().backward()
            routed.append([mark(r) for r in state.rows[at:] if r[OP] in ("aten::mm", "aten::addmm")])
        float32 = len(state.rows)
        torch.mm(torch.randn(8, 8, device="cuda"), torch.randn(8, 8, device="cuda"))
        single = [mark(r) for r in state.rows[float32:] if r[OP] == "aten::mm"]
    assert static == ["gemm", None]
    # Forward w1 (new), w3 (the same shape in this routing); backward: the two weight gradients reduce over
    # the routed tokens (gemm_k, the second the first's shape).
    assert routed[0] == ["gemm", None, "gemm_k", None], routed
    assert routed[1] == routed[0]  # a new routing: new sizes again
    assert single == ["gemm_float32"]
