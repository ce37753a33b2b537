"""End-to-end emulation of unmodified CUDA scripts, run in-process through `maya.emulate`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import maya
from maya.emulator.runner import ScriptModule
from maya.estimator.host_cost import (
    LIST_ENTRIES_PER_PARAMETER,
    host_costs_us,
    host_overhead,
    host_scale,
)
from maya.trace import IncompleteTraceError, read_meta, read_rank_trace

MiB = 1 << 20
GPT = Path(__file__).parents[2] / "examples" / "train_gpt.py"
TINY = ["--batch", "4", "--seq", "64", "--dim", "64", "--layers", "2", "--heads", "4", "--vocab", "512"]


def _emulate_source(tmp_path, name: str, source: str):
    """Write `source` as the script `name`, emulate it on an H200 and check that it ran to the end."""
    script = tmp_path / name
    script.write_text(source)
    summary = maya.emulate(script, [], gpu="h200", trace_dir=tmp_path / "trace")
    assert summary.exit_code == 0, summary.error
    return summary


def _ops(summary, phase=None):
    table = read_rank_trace(summary.trace_dir, 0).to_pandas()
    table = table[table.kind == "kernel"]
    return table if phase is None else table[table.phase == phase]


def test_bf16_gpt_records_fused_attention_foreach_optimizer_and_modules(scripts, tmp_path):
    s = maya.emulate(GPT, [*TINY, "--steps", "3"], trace_dir=tmp_path / "t")
    assert s.exit_code == 0, s.error
    assert [it.index for it in s.iterations] == [0, 1, 2]
    ops = _ops(s)
    assert (ops.op == "aten::_scaled_dot_product_cudnn_attention").sum() == 2 * 3  # layers * steps
    assert (ops.op == "aten::_scaled_dot_product_cudnn_attention_backward").sum() == 2 * 3
    opt = ops[ops.phase == "optimizer"]
    assert opt.op.str.startswith("aten::_foreach_").any()
    # Adam's _foreach_addcmul_(exp_avg_sqs, grads, grads): the grads are recorded once, and the
    # third list points at them, as the kernel reads them once.
    addcmul = opt[opt.op == "aten::_foreach_addcmul_.Scalar"].iloc[0]
    args = json.loads(addcmul["attrs"])["args"]
    assert args[1] == args[2] and len(addcmul.input_shapes) == 2 * len(args[0])
    # The host still walks three lists.
    c = host_overhead("h200")
    per_entry = c["optimizer_foreach_per_tensor_us"] / LIST_ENTRIES_PER_PARAMETER
    host_us = host_costs_us(opt[opt.op == "aten::_foreach_addcmul_.Scalar"].iloc[:1])[0]
    assert host_us == pytest.approx(host_scale("h200") * (c["aten_op_us"] + 3 * len(args[0]) * per_entry))
    assert "blocks.1.qkv" in set(ops[ops.phase == "forward"].module)
    assert "blocks.1.qkv" in set(ops[ops.phase == "backward"].module)
    # Autocast: the qkv projection runs in bf16 on fp32 weights cast once per step.
    qkv = ops[(ops.module == "blocks.0.qkv") & (ops.op == "aten::addmm")]
    assert len(qkv) == 3 and all(list(d) == ["bfloat16", "bfloat16", "bfloat16"] for d in qkv.input_dtypes)
    # Cross-entropy under autocast: log_softmax keeps the bf16 dtype, nll_loss gets a float32 copy
    # (what the H200 runs: benchmarks/gpu/op_timelines_h200/gpt2_124m_bf16.json).
    assert all(list(d) == ["bfloat16"] for d in ops[ops.op == "aten::_log_softmax"].input_dtypes)
    assert all(list(d)[0] == "float32" for d in ops[ops.op == "aten::nll_loss_forward"].input_dtypes)
    meta = read_meta(s.trace_dir)
    assert meta["gpu"] == "h200" and meta["emulated_ranks"] == [0]


@pytest.mark.parametrize(
    "args,attention",
    [
        (["--precision", "fp16"], "aten::_scaled_dot_product_cudnn_attention"),
        (["--precision", "fp32", "--optimizer", "sgd"], "aten::_scaled_dot_product_efficient_attention"),
    ],
)
def test_precisions(scripts, tmp_path, args, attention):
    s = maya.emulate(GPT, [*TINY, "--steps", "2", *args], trace_dir=tmp_path / "t")
    assert s.exit_code == 0, s.error
    assert (_ops(s).op == attention).sum() == 4


def test_grad_scaler_unscales_and_steps(scripts, tmp_path):
    s = maya.emulate(GPT, [*TINY, "--steps", "2", "--precision", "fp16"], trace_dir=tmp_path / "t")
    ops = _ops(s).op
    assert (ops == "aten::_amp_foreach_non_finite_check_and_unscale_").sum() == 2
    assert (ops == "aten::_amp_update_scale_").sum() == 2
    assert len(s.iterations) == 2  # the scaler did not skip optimizer.step()


@pytest.mark.parametrize("mode", ["reentrant", "nonreentrant"])
def test_activation_checkpointing_recomputes_forward_in_backward(tmp_path, mode):
    # Big enough that activations, not the two 32 MiB cuBLAS workspaces, decide the peak.
    size = ["--batch", "8", "--seq", "512", "--dim", "256", "--layers", "2", "--heads", "4", "--vocab", "512"]
    plain = maya.emulate(GPT, [*size, "--steps", "1"], trace_dir=tmp_path / "a")
    ckpt = maya.emulate(GPT, [*size, "--steps", "1", "--checkpoint", mode], trace_dir=tmp_path / "b")
    assert ckpt.exit_code == 0, ckpt.error
    bwd = _ops(ckpt, "backward")
    assert (bwd.op == "aten::_scaled_dot_product_cudnn_attention").sum() == 2  # recomputed per layer
    assert ckpt.peak_allocated_bytes < plain.peak_allocated_bytes
    trace = read_rank_trace(ckpt.trace_dir, 0).to_pandas()
    host = trace[trace.kind == "host"]
    # One region per layer after its forward, and one recomputation of it in backward, before the
    # recomputed ops; both carry the region's forward ops.
    assert list(host.op) == ["torch:checkpoint"] * 2 + ["torch:checkpoint_recompute"] * 2
    assert list(host.phase) == ["forward"] * 2 + ["backward"] * 2
    ops = [json.loads(a)["ops"] for a in host["attrs"]]
    assert ops[0] > 0 and ops == [ops[0]] * 4
    between = trace.loc[host.index[2]:host.index[3]]  # the last layer's recomputation and backward
    assert (between.op == "aten::_scaled_dot_product_cudnn_attention").sum() == 1


def test_gradient_accumulation_doubles_forward_work(scripts, tmp_path):
    one = maya.emulate(GPT, [*TINY, "--steps", "1"], trace_dir=tmp_path / "a")
    two = maya.emulate(GPT, [*TINY, "--steps", "1", "--accum", "2"], trace_dir=tmp_path / "b")
    attn = "aten::_scaled_dot_product_cudnn_attention"
    assert (_ops(two).op == attn).sum() == 2 * (_ops(one).op == attn).sum()


@pytest.mark.parametrize("model", ["gpt2", "llama", "bert"])
def test_huggingface_models_from_config(scripts, tmp_path, model):
    s = maya.emulate(scripts / "hf_models.py", ["--model", model], trace_dir=tmp_path / "t")
    assert s.exit_code == 0, s.error
    assert len(s.iterations) == 2
    assert (_ops(s).op.str.contains("attention")).any()


def test_resnet_channels_last_amp_runs_convolutions_and_batchnorm(scripts, tmp_path):
    s = maya.emulate(scripts / "resnet.py", ["--amp", "--channels-last"], trace_dir=tmp_path / "t")
    assert s.exit_code == 0, s.error
    ops = _ops(s)
    assert (ops.op == "aten::convolution").any() and (ops.op == "aten::convolution_backward").any()
    assert ops.op.str.contains("batch_norm").any()


@pytest.mark.parametrize("channels_last", [False, True])
def test_group_norm_copies_a_channels_last_input_to_nchw_as_cuda_does(scripts, tmp_path, channels_last):
    # torch.group_norm keeps a channels-last input's layout on CPU and PrivateUse1 devices (the proxy
    # device is one) but calls contiguous() on CUDA: one clone kernel, then an NCHW native_group_norm.
    s = maya.emulate(scripts / "cnn_norms.py", ["--precision", "fp32"] + ["--channels-last"] * channels_last,
                     trace_dir=tmp_path / "t")
    assert s.exit_code == 0, s.error
    ops = _ops(s)
    ops = ops.iloc[:int(ops.op.eq("aten::native_group_norm_backward").to_numpy().argmax()) + 1]  # not the layer norm's
    ops = ops[ops.op.isin(["aten::clone", "aten::native_group_norm", "aten::native_group_norm_backward"])]
    clone = ["aten::clone"] if channels_last else []
    assert list(ops.op) == clone + ["aten::native_group_norm", "aten::native_group_norm_backward"]
    for strides in ops.input_strides.iloc[-2:]:
        assert list(strides[0]) == [7680, 120, 12, 1]  # [4, 64, 10, 12] contiguous


def test_memory_figures_follow_the_caching_allocator(scripts, tmp_path, capsys):
    s = maya.emulate(scripts / "memory_probe.py", trace_dir=tmp_path / "t")
    assert s.exit_code == 0, s.error
    line = next(l for l in capsys.readouterr().out.splitlines() if l.startswith("MEMORY"))
    m = json.loads(line.removeprefix("MEMORY "))
    assert m["after_alloc"] == [4096 + 3 * MiB, 2 * MiB + 20 * MiB]
    assert m["after_free"] == [4096, 22 * MiB, 4096 + 3 * MiB]
    assert m["after_empty"] == 2 * MiB  # the 20 MiB segment went back; the small one is in use
    assert m["caught_oom"] is True
    assert m["item"] == 4.0 and m["nonzero"] == [4, 1]  # ones(4).sum(): small known values are computed
    assert m["device"] == "cuda:0" and m["is_cuda"] is True
    assert m["name"] == "NVIDIA H200" and m["cap"] == [9, 0]


def test_uncaught_oom_is_reported_and_fails(scripts, tmp_path):
    s = maya.emulate(scripts / "oom.py", trace_dir=tmp_path / "t")
    assert s.oom is True and s.exit_code != 0
    assert "OutOfMemoryError" in s.error
    with pytest.raises(IncompleteTraceError):
        read_meta(s.trace_dir)


def test_failing_script_reports_its_own_traceback(scripts, tmp_path):
    s = maya.emulate(scripts / "fails.py", trace_dir=tmp_path / "t")
    assert s.exit_code == 1
    assert "broken_helper" in s.error and "the user's own bug" in s.error
    with pytest.raises(IncompleteTraceError):
        read_meta(s.trace_dir)
    assert pq.read_table(tmp_path / "t" / "rank=0" / "trace.parquet").num_rows >= 1


def test_a_script_failing_after_whole_iterations_still_gets_their_times(tmp_path):
    # A checkpoint that cannot be written at the end: the training steps before it are predicted, the
    # run still fails (exit status 1, its traceback), and its trace stays incomplete for `maya simulate`.
    script = tmp_path / "fails_at_end.py"
    script.write_text(
        "import torch\n"
        "m = torch.nn.Linear(64, 64).cuda()\n"
        "opt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
        "for step in range(3):\n"
        "    m(torch.randn(8, 64, device='cuda')).sum().backward()\n"
        "    opt.step()\n"
        "raise RuntimeError('could not write the final checkpoint')\n"
    )
    s = maya.emulate(script, trace_dir=tmp_path / "t")
    assert s.exit_code == 1 and "could not write the final checkpoint" in s.error
    assert len(s.iterations) == 3 and all(it.time_ms > 0 for it in s.iterations)
    with pytest.raises(IncompleteTraceError):
        read_meta(s.trace_dir)
    # Failing inside its first iteration: nothing to time.
    script.write_text("import torch\nx = torch.randn(8, device='cuda')\nraise RuntimeError('early')\n")
    early = maya.emulate(script, trace_dir=tmp_path / "t2")
    assert early.exit_code == 1 and all(it.time_ms is None for it in early.iterations)


def test_unsupported_cuda_call_is_named(scripts, tmp_path):
    s = maya.emulate(scripts / "unsupported.py", trace_dir=tmp_path / "t")
    assert s.exit_code == 1 and "torch.cuda.caching_allocator_alloc cannot be emulated" in s.error
    # A private memory pool had failed with torch's "Tried to instantiate dummy base class MemPool".
    script = tmp_path / "pool.py"
    script.write_text("import torch\npool = torch.cuda.memory.MemPool()\n")
    s = maya.emulate(script, trace_dir=tmp_path / "t2")
    assert s.exit_code == 1 and "torch.cuda.MemPool cannot be emulated by Maya" in s.error


def test_a_host_tensor_given_gpu_data_is_named(tmp_path):
    # A host tensor cannot take an emulated GPU tensor's data; the script's traceback says what to do.
    script = tmp_path / "data_move.py"
    script.write_text("import torch\nw = torch.nn.Parameter(torch.randn(4))\nw.data = w.to('cuda')\n")
    s = maya.emulate(script, trace_dir=tmp_path / "t")
    assert s.exit_code == 1 and "w.data = w.to('cuda')" in s.error
    assert "a tensor on the host was given an emulated GPU tensor's data" in s.error and "module.cuda()" in s.error


def test_what_a_script_sets_in_the_environment_is_undone_after_it(tmp_path, monkeypatch):
    # accelerate sets ACCELERATE_USE_DEEPSPEED for a DeepSpeed run; a later emulation in the same
    # process (a Ray worker, the tests) then took its Trainer for a DeepSpeed one.
    monkeypatch.setenv("MAYA_TEST_KEPT", "before")
    script = tmp_path / "env.py"
    script.write_text("import os\nos.environ['MAYA_TEST_ADDED'] = '1'\nos.environ['MAYA_TEST_KEPT'] = 'changed'\n")
    assert maya.emulate(script, trace_dir=tmp_path / "t").exit_code == 0
    assert "MAYA_TEST_ADDED" not in os.environ and os.environ["MAYA_TEST_KEPT"] == "before"


def test_missing_script_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="training script not found"):
        maya.emulate(tmp_path / "nope.py")


def test_emulation_leaves_torch_cuda_as_it_was(scripts, tmp_path):
    import torch

    before = torch.cuda.is_available
    maya.emulate(scripts / "memory_probe.py", trace_dir=tmp_path / "t")
    assert torch.cuda.is_available is before


def test_data_dependent_selections_stay_on_the_emulated_gpu(scripts, tmp_path, capsys):
    s = maya.emulate(scripts / "select_all.py", trace_dir=tmp_path / "t")
    assert s.exit_code == 0, s.error
    # nonzero selects all 8 rows; boolean indexing selects all 32 elements.
    out = capsys.readouterr().out
    assert "torch.Size([8, 4]) torch.Size([32]) cuda:0" in out
    assert "all/any: True False" in out  # the "nothing is wrong" placeholders
    assert (_ops(s).op == "aten::index_add").sum() == 1


def test_grad_clipping_takes_the_foreach_path(tmp_path):
    s = maya.emulate(GPT, [*TINY, "--steps", "1"], trace_dir=tmp_path / "t")
    ops = _ops(s).op
    assert (ops == "aten::_foreach_norm.Scalar").sum() == 1
    assert (ops == "aten::linalg_vector_norm").sum() == 1  # the norm of the per-tensor norms


def test_module_cuda_keeps_tied_weights_tied(tmp_path):
    # examples/train_gpt.py ties lm_head.weight to wte.weight before model.cuda().
    one = maya.emulate(GPT, [*TINY, "--steps", "1"], trace_dir=tmp_path / "t")
    memcpys = read_rank_trace(one.trace_dir, 0).to_pandas().query("kind == 'memcpy'")
    # The 512 x 64 embedding moves to the GPU once, not once per module that holds it.
    assert sum(list(s[0]) == [512, 64] for s in memcpys.input_shapes) == 1


def test_huggingface_llama_uses_sdpa_gqa_without_a_mask(scripts, tmp_path):
    # On a GPU transformers passes k/v with their own 2 heads and no mask; it must not take the
    # emulated tensors for graph tracing (benchmarks/gpu/op_timelines_h200/hf_llama_bf16.json).
    s = maya.emulate(scripts / "hf_models.py", ["--model", "llama"], trace_dir=tmp_path / "t")
    ops = _ops(s)
    attn = ops[ops.op == "aten::_scaled_dot_product_cudnn_attention"]
    assert all(list(shapes[1])[1] == 2 for shapes in attn.input_shapes)
    assert not ops.op.isin(["aten::bitwise_not", "aten::masked_fill.Scalar"]).any()


def test_an_op_without_a_fake_implementation_is_named_with_its_module_path(scripts, tmp_path):
    s = maya.emulate(scripts / "custom_op.py", trace_dir=tmp_path / "t")
    assert s.exit_code == 1
    assert "Maya cannot emulate userlib::scale (module path: inner)" in s.error


def test_topk_routing_sends_each_expert_its_uniform_share(scripts, tmp_path, capsys):
    s = maya.emulate(scripts / "moe_routing.py", trace_dir=tmp_path / "t")
    assert s.exit_code == 0, s.error
    out = capsys.readouterr().out
    # 64 tokens, top-2 of 8 experts: each expert gets 64 * 2 / 8 = 16 (token, slot) pairs.
    assert "where(one_hot): (16,)" in out
    assert "nonzero(==): (16, 2)" in out
    assert "bool index: (56, 8)" in out  # column 0 is not expert 2 for 7/8 of 64 tokens
    assert "bincount: (8,) 16" in out  # 128 picks over 8 experts
    assert "experts hit: (8, 1)" in out  # every expert gets tokens
    assert "unhinted: (512, 2)" in out  # no hint: every element selected
    # Each data-dependent size is copied to the host: a sync row right after its kernel.
    table = read_rank_trace(s.trace_dir, 0).to_pandas()
    after = table.kind.shift(-1)[table.op.isin(["aten::nonzero", "aten::bincount"])]
    assert len(after) == 5 and (after == "sync").all()


def test_blocking_host_to_gpu_copies_synchronise_the_stream(tmp_path):
    # ATen's copy_kernel_cuda ends a copy with non_blocking=False in stream_synchronize, in both
    # directions; a non-blocking copy from pinned memory does not wait.
    script = tmp_path / "copies.py"
    script.write_text(
        "import torch\n"
        "x = torch.randn(64, 64)\n"
        "y = torch.randn(64, 64, device='cuda') @ torch.randn(64, 64, device='cuda')\n"
        "a = x.to('cuda')\n"
        "b = x.pin_memory().to('cuda', non_blocking=True)\n"
        "c = a.cpu()\n"
    )
    s = maya.emulate(script, trace_dir=tmp_path / "t")
    assert s.exit_code == 0, s.error
    rows = read_rank_trace(s.trace_dir, 0).to_pandas()
    rows = rows[rows.kind.isin(["memcpy", "sync"])]
    assert list(zip(rows.kind, rows.op)) == [
        ("memcpy", "aten::_to_copy"), ("sync", "cuda:host_to_device"),
        ("memcpy", "aten::_to_copy"),
        ("memcpy", "aten::_to_copy"), ("sync", "cuda:device_to_host"),
    ]


DATA_PARALLEL_SCRIPT = """
import sys
import torch, torch.nn as nn
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).cuda()
if sys.argv[1] == "dp":
    model = nn.DataParallel(model)
if sys.argv[1] == "dp-host-input":
    model = nn.DataParallel(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(32, 64) if sys.argv[1] == "dp-host-input" else torch.randn(32, 64, device="cuda")
    model(x).sum().backward()
    opt.step(); opt.zero_grad()
"""


def test_data_parallel_runs_on_the_one_emulated_gpu(tmp_path):
    # nn.DataParallel scatters and gathers with torch._C's CUDA-only comm functions, which a CPU build
    # lacks: the script had failed with "module 'torch._C' has no attribute '_scatter'".
    script = tmp_path / "dp.py"
    script.write_text(DATA_PARALLEL_SCRIPT)
    plain = maya.emulate(script, ["plain"], trace_dir=tmp_path / "plain")
    wrapped = maya.emulate(script, ["dp"], trace_dir=tmp_path / "dp")
    assert plain.exit_code == 0 and wrapped.exit_code == 0, wrapped.error
    # On one GPU DataParallel calls the module itself: the same kernels, the input already there
    assert _ops(wrapped).op.tolist() == _ops(plain).op.tolist()
    host = maya.emulate(script, ["dp-host-input"], trace_dir=tmp_path / "host")
    memcpys = read_rank_trace(host.trace_dir, 0).to_pandas().query("kind == 'memcpy'")
    scattered = memcpys[[list(s[0]) == [32, 64] for s in memcpys.input_shapes]]
    assert host.exit_code == 0 and len(scattered) == 3
    # copied on a side stream, which the default stream then waits for, as DataParallel does
    assert (scattered.stream != 0).all()
    waits = read_rank_trace(host.trace_dir, 0).to_pandas().query("kind == 'stream_wait'")
    assert len(waits) == 3 and (waits.stream == 0).all()


def test_data_parallel_over_several_gpus_is_refused_by_name(tmp_path):
    script = tmp_path / "dp2.py"
    script.write_text("import torch\nm = torch.nn.DataParallel(torch.nn.Linear(4, 4).cuda(), device_ids=[0, 1])\n")
    s = maya.emulate(script, trace_dir=tmp_path / "t")
    assert s.exit_code == 1 and "torch.nn.DataParallel over several GPUs in one process" in s.error
    assert "--nproc-per-node" in s.error


def test_distribution_argument_checks_read_valid(tmp_path):
    # torch.distributions checks parameters and samples against their constraints
    # (`torch._is_all_true(valid)`, a host read); the unknown value had read as invalid: "ValueError:
    # Expected parameter loc ... to satisfy the constraint Real(), but found invalid values".
    script = tmp_path / "vae.py"
    script.write_text(
        "import torch, torch.nn as nn, torch.nn.functional as F\n"
        "from torch.distributions import Normal, kl_divergence\n"
        "enc = nn.Linear(32, 16).cuda()\n"
        "opt = torch.optim.Adam(enc.parameters())\n"
        "for _ in range(2):\n"
        "    mu, s = enc(torch.randn(8, 32, device='cuda')).chunk(2, dim=1)\n"
        "    q = Normal(mu, F.softplus(s) + 1e-4)\n"
        "    z = q.rsample()\n"
        "    loss = -q.log_prob(z).sum() + kl_divergence(q, Normal(torch.zeros_like(mu), torch.ones_like(mu))).sum()\n"
        "    loss.backward(); opt.step(); opt.zero_grad()\n"
        "assert not torch._is_all_true(torch.zeros(1, dtype=torch.bool)).item()  # host tensors: their own answer\n"
    )
    s = maya.emulate(script, trace_dir=tmp_path / "t")
    assert s.exit_code == 0, s.error
    rows = read_rank_trace(s.trace_dir, 0).to_pandas()
    checks = rows[(rows.op == "aten::_is_all_true") & (rows.iteration == 1)]
    assert len(checks) >= 4  # loc and scale of each Normal, and the sample given to log_prob
    reads = rows[(rows.kind == "sync") & (rows.iteration == 1)]
    assert len(reads) >= len(checks)  # each check is read on the host, as on a GPU


def test_a_scripts_own_cuda_profiler_profiles_the_host_quietly(tmp_path, capfd):
    # A CPU build has no CUDA profiler: each op had printed a C++ warning with its stack.
    script = tmp_path / "profiled.py"
    script.write_text(
        "import torch\n"
        "from torch.profiler import profile, ProfilerActivity\n"
        "m = torch.nn.Linear(64, 64).cuda()\n"
        "with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:\n"
        "    for _ in range(2):\n"
        "        m(torch.randn(8, 64, device='cuda')).sum().backward()\n"
        "assert any(e.key == 'aten::mm' for e in prof.key_averages())  # the host side is profiled\n"
        "with torch.autograd.profiler.profile(use_device='cuda'):\n"
        "    m(torch.randn(8, 64, device='cuda'))\n"
        "with torch.autograd.profiler.emit_nvtx():\n"  # Nsight Systems' markers: nothing to do
        "    m(torch.randn(8, 64, device='cuda'))\n"
        "torch.cuda.profiler.start(); torch.cuda.profiler.stop()\n"
        "with torch.cuda.profiler.profile():\n"
        "    m(torch.randn(8, 64, device='cuda'))\n"
    )
    with pytest.warns(UserWarning, match=r"torch.profiler under Maya emulation records host \(CPU\) activity only"), \
            pytest.warns(UserWarning, match=r"torch.autograd.profiler under Maya emulation records host"):
        s = maya.emulate(script, trace_dir=tmp_path / "t")
    assert s.exit_code == 0, s.error
    assert "Failed to record CUDA event" not in capfd.readouterr().err


def test_allocator_settings_are_followed_and_those_not_emulated_named(tmp_path, caplog, monkeypatch):
    # A script that sets PYTORCH_CUDA_ALLOC_CONF before its first CUDA allocation gets that allocator
    # (expandable segments here: pages of 20 MiB mapped as needed), and `_set_allocator_settings` changes
    # it from then on; what Maya does not emulate (CUDA's own pool allocator) is named in a warning.
    import logging

    from maya.emulator.runner import allocator_settings_note

    assert allocator_settings_note(["", "expandable_segments:True,max_split_size_mb:64"]) is None
    assert "(backend:cudaMallocAsync, foo)" in allocator_settings_note(
        ["backend:cudaMallocAsync,foo", "backend:cudaMallocAsync"])  # each once
    script = tmp_path / "alloc.py"
    mib = 1 << 20
    script.write_text(
        "import os\n"
        "os.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'expandable_segments:True,backend:cudaMallocAsync'\n"
        "import torch\n"
        f"x = torch.empty({11 * mib}, dtype=torch.uint8, device='cuda')\n"
        f"y = torch.empty({11 * mib}, dtype=torch.uint8, device='cuda')\n"
        f"assert torch.cuda.memory_reserved() == {40 * mib}, torch.cuda.memory_reserved()\n"  # default: 2 x 12 MiB
        "torch.cuda.memory._set_allocator_settings('expandable_segments:False')\n"
        f"z = torch.empty({30 * mib}, dtype=torch.uint8, device='cuda')\n"  # a segment of its own again
        f"assert torch.cuda.memory_reserved() == {70 * mib}, torch.cuda.memory_reserved()\n"
    )
    monkeypatch.delenv("PYTORCH_CUDA_ALLOC_CONF", raising=False)
    with caplog.at_level(logging.WARNING, logger="maya.emulator.runner"):
        s = maya.emulate(script, trace_dir=tmp_path / "t")
    assert s.exit_code == 0, s.error
    notes = [r.getMessage() for r in caplog.records if "allocator settings not emulated" in r.getMessage()]
    assert len(notes) == 1 and "(backend:cudaMallocAsync)" in notes[0]
    assert "PYTORCH_CUDA_ALLOC_CONF" not in os.environ  # the script's setting ends with it
    # A bad value fails the script where PyTorch fails it, at the first allocation, naming the setting.
    script.write_text("import os\nos.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'max_split_size_mb:4'\n"
                      "import torch\nx = torch.zeros(8, device='cuda')\n")
    s = maya.emulate(script, trace_dir=tmp_path / "bad")
    assert s.exit_code == 1 and "max_split_size_mb: 4 MiB is below the 20 MiB minimum" in s.error
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="maya.emulator.runner"):
        maya.emulate(GPT, [*TINY, "--steps", "1"], trace_dir=tmp_path / "plain")
    assert not [r for r in caplog.records if "allocator settings" in r.getMessage()]


def test_transformer_encoder_inference_with_padding_runs_on_the_padded_batch(tmp_path):
    # nn.TransformerEncoder's inference fast path makes a nested tensor from the padding mask; it had
    # stopped evaluation loops with "NestedTensorImpl doesn't support sizes".
    script = tmp_path / "encoder.py"
    script.write_text(
        "import torch, torch.nn as nn\n"
        "enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(64, 4, 128, batch_first=True), 2).cuda()\n"
        "x = torch.randn(4, 16, 64, device='cuda')\n"
        "pad = torch.zeros(4, 16, dtype=torch.bool, device='cuda'); pad[:, 12:] = True\n"
        "enc(x, src_key_padding_mask=pad).sum().backward()\n"
        "enc.eval()\n"
        "with torch.no_grad():\n"
        "    assert enc(x, src_key_padding_mask=pad).shape == (4, 16, 64)\n"
        "assert enc.use_nested_tensor  # as the script built it\n"
    )
    with pytest.warns(UserWarning, match="nested-tensor inference path is not emulated"):
        s = maya.emulate(script, trace_dir=tmp_path / "t")
    assert s.exit_code == 0, s.error
    ops = _ops(s).op.tolist()
    assert ops.count("aten::_transformer_encoder_layer_fwd") == 2  # each layer's fused inference path


def test_an_op_with_a_nested_result_is_named(tmp_path):
    script = tmp_path / "nested.py"
    script.write_text(
        "import torch\n"
        "x = torch.randn(2, 3, 4, device='cuda')\n"
        "torch._nested_tensor_from_mask(x, torch.ones(2, 3, dtype=torch.bool, device='cuda'))\n"
    )
    s = maya.emulate(script, trace_dir=tmp_path / "t")
    assert s.exit_code == 1
    assert "Maya cannot emulate aten::_nested_tensor_from_mask" in s.error and "nested or sparse tensor" in s.error


@pytest.mark.parametrize("make, named", [
    ("torch.nested.nested_tensor([torch.randn(3, 8), torch.randn(5, 8)], device='cuda')",
     "Maya cannot emulate aten::_nested_tensor_from_tensor_list"),
    ("torch.nested.nested_tensor([torch.randn(3, 8), torch.randn(5, 8)], layout=torch.jagged, device='cuda')",
     "torch.nested jagged tensors"),
])
def test_nested_tensors_on_the_gpu_are_named(tmp_path, make, named):
    # PyTorch's own errors named neither: "PyTorch is not linked with support for cuda devices" and
    # "self.shape_env must not be None".
    script = tmp_path / "nested.py"
    script.write_text(f"import torch\nnt = {make}\n")
    s = maya.emulate(script, trace_dir=tmp_path / "t")
    assert s.exit_code == 1
    assert named in s.error


def test_compiled_code_runs_eagerly_and_says_what_that_predicts(tmp_path):
    # The three forms of torch.compile: the function, the decorator with and without arguments, and
    # Module.compile(); each runs as eager PyTorch, recorded op by op, with a warning saying so.
    script = tmp_path / "compiled.py"
    script.write_text(
        "import torch, torch.nn as nn\n"
        "m = nn.Linear(8, 8).cuda(); m.compile()\n"
        "n = torch.compile(nn.Linear(8, 8).cuda(), mode='max-autotune')\n"
        "@torch.compile\n"
        "def f(x): return torch.sigmoid(x) * 2\n"
        "@torch.compile(fullgraph=True)\n"
        "def g(x): return torch.sin(x)\n"
        "g(f(n(m(torch.randn(2, 8, device='cuda'))))).sum().backward()\n"
        "torch._dynamo.reset(); torch.compiler.reset()\n"  # had failed importing Inductor's CUDA graph trees
    )
    with pytest.warns(UserWarning, match=r"torch.compile runs eagerly .* predicted as eager PyTorch's"):
        s = maya.emulate(script, trace_dir=tmp_path / "t")
    assert s.exit_code == 0, s.error
    ops = set(_ops(s).op)
    assert {"aten::addmm", "aten::sigmoid", "aten::sin", "aten::sigmoid_backward", "aten::cos"} <= ops


def test_a_module_runs_as_python_dash_m_runs_it(scripts, tmp_path, capsys):
    # torchtitan's form (`torchrun -m torchtitan.train`): the package is found from the caller's
    # directory, its relative imports resolve, and sys.argv[0] is the module's file.
    entry = ScriptModule(name="module_entry.train", directory=str(scripts))
    s = maya.emulate(entry, ["--steps", "3"], trace_dir=tmp_path / "t")
    assert s.exit_code == 0, s.error
    assert len(s.iterations) == 3 and s.median_iteration_ms > 0
    out = capsys.readouterr().out
    assert f"entry {scripts / 'module_entry' / 'train.py'} package module_entry rank 0" in out
    assert read_meta(tmp_path / "t")["script"] == "-m module_entry.train"
    with pytest.raises(FileNotFoundError, match="training module not found: no_such_package"):
        maya.emulate(ScriptModule(name="no_such_package.train", directory=str(scripts)))
    missing = maya.emulate(ScriptModule(name="module_entry.no_such_entry", directory=str(scripts)))
    assert missing.exit_code == 1 and "No module named module_entry.no_such_entry" in missing.error


def test_a_long_run_reports_its_progress(tmp_path):
    # `maya emulate` passes a progress callback: while the script runs, a line every
    # `progress_every_s` seconds (20 s by default) says how far it got.
    script = tmp_path / "slow.py"
    script.write_text(
        "import time, torch\n"
        "x = torch.ones(4, device='cuda')\n"
        "for _ in range(3):\n"
        "    x = x * 2\n"
        "    time.sleep(0.2)\n"
    )
    from maya.emulator.runner import run_script
    from maya.emulator.state import RankConfig
    from maya.hardware import load_gpu

    lines = []
    config = RankConfig(gpu=load_gpu("h200"), rank=0, world_size=1, local_rank=0, local_world_size=1)
    outcome = run_script(script, [], config, progress=lines.append, progress_every_s=0.15)
    assert outcome.exit_code == 0, outcome.error
    assert len(lines) >= 2  # the script sleeps 0.6 s; emulation set-up on a busy machine may add more lines
    assert lines[0].startswith("  rank 0: 0 s, ")
    assert all(line.endswith(" trace rows, 0 iterations ended") for line in lines)
    quiet = run_script(script, [], config)
    assert quiet.exit_code == 0


def test_a_session_that_cannot_start_raises_its_own_error_alone(tmp_path, monkeypatch):
    # A broken torch install fails inside EmulationSession.__enter__ (its first step imports
    # torch._dynamo); the runner's clean-up must not add an AttributeError of its own on top.
    import sys

    from maya.emulator.runner import run_script
    from maya.emulator.state import RankConfig
    from maya.hardware import load_gpu

    script = tmp_path / "ok.py"
    script.write_text("print('never runs')\n")
    monkeypatch.setitem(sys.modules, "torch._dynamo", None)  # `import torch._dynamo` now fails as when it is absent
    config = RankConfig(gpu=load_gpu("h200"), rank=0, world_size=1, local_rank=0, local_world_size=1)
    argv = sys.argv[:]
    with pytest.raises(ImportError):
        run_script(script, [], config)
    assert sys.argv == argv


def test_a_shuffling_loader_over_a_large_dataset_draws_a_real_permutation(tmp_path):
    # RandomSampler draws torch.randperm(len(dataset)).tolist(): over 200,000 samples, faked, it gave a
    # placeholder read per sample and ran into the emulator's bound on them (Megatron's mock dataset).
    _emulate_source(
        tmp_path, "shuffle.py",
        "import torch\n"
        "from torch.utils.data import DataLoader, Dataset\n"
        "class Tokens(Dataset):\n"
        "    def __len__(self):\n"
        "        return 200_000\n"
        "    def __getitem__(self, i):\n"
        "        return torch.full((16,), i)\n"
        "seen = []\n"
        "for step, batch in enumerate(DataLoader(Tokens(), batch_size=8, shuffle=True)):\n"
        "    seen += batch[:, 0].tolist()\n"
        "    batch.cuda().float().sum()\n"
        "    if step == 2:\n"
        "        break\n"
        "assert len(set(seen)) == 24 and max(seen) > 1000, seen\n",
    )


def test_a_device_given_as_an_index_is_the_emulated_gpu_of_that_rank(tmp_path):
    # Megatron-Core allocates its buffers with device=torch.cuda.current_device(), an int: on local rank 1
    # that reached the dispatcher as the proxy device's index 1, apart from every other emulated tensor.
    from maya.world.rank_emulation import emulate_rank

    script = tmp_path / "index_device.py"
    script.write_text(
        "import torch\n"
        "torch.cuda.set_device(1)\n"
        "buffer = torch.empty(4, 8, device=torch.cuda.current_device())\n"
        "x = torch.randn(4, 8, device='cuda')\n"
        "assert buffer.device == x.device == torch.device('cuda', 1), (buffer.device, x.device)\n"
        "(buffer + x).sum()\n"
        "torch.ones(2).to(1).add_(x[0, :2])\n"
    )
    result = emulate_rank(str(script), [], "h200", 1, 2, 2)
    assert result.exit_code == 0, result.error


def test_legacy_tensor_types_and_tensors_built_from_gpu_scalars(tmp_path):
    # Megatron's mixed-precision optimizer checks param.type() == "torch.cuda.BFloat16Tensor", and its
    # Apex-free gradient norm builds torch.tensor([t.norm() for t in grads]) from GPU scalars, which C++
    # read below Maya's modes ("Could not run 'aten::_local_scalar_dense' with arguments from the 'maya' backend").
    summary = _emulate_source(
        tmp_path, "legacy.py",
        "import torch\n"
        "w = torch.nn.Linear(8, 8).cuda().bfloat16().weight\n"
        "assert w.type() == 'torch.cuda.BFloat16Tensor', w.type()\n"
        "assert torch.ones(2).type() == 'torch.FloatTensor'\n"
        "h = w.type('torch.cuda.HalfTensor')\n"
        "assert h.dtype == torch.float16 and h.is_cuda and h.type() == 'torch.cuda.HalfTensor'\n"
        "grads = [torch.randn(16, device='cuda'), torch.randn(4, 4, device='cuda')]\n"
        "norms = torch.tensor([[g.norm() for g in grads]])\n"
        "assert norms.shape == (1, 2) and norms.device.type == 'cpu'\n"
        "total = torch.tensor([float(norms.norm())], device='cuda')\n"
        "assert total.is_cuda\n",
    )
    ops = [r["op"] for r in read_rank_trace(summary.trace_dir, 0).to_pylist()]
    assert ops.count("cuda:item") >= 2  # each GPU scalar read on the host, as CUDA reads it
