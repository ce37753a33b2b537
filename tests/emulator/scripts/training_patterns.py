"""Training-script patterns beyond single ops, each run once on the emulated GPU: CUDA queries, streams,
generators, checkpointing, fused and capturable optimizers, attention variants, autocast APIs, pinned
memory, torch.compile, FlexAttention, vmap, spectral norm, EMA, inference mode, gradient penalties,
two-optimizer GANs, hooks, anomaly detection, finiteness checks, CUDA events, the profiler. The test
runs it under `maya emulate` and expects every case to run; a case that fails prints its name.
Also: numpy metrics of predictions, and a checkpoint saved, loaded and resumed."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

d = "cuda"
results = {}


def case(name):
    def deco(fn):
        try:
            fn()
            results[name] = "ok"
        except Exception as e:
            results[name] = f"FAIL {type(e).__name__}: {str(e).splitlines()[0][:200]}"
        return fn
    return deco


@case("cuda_queries")
def _():
    torch.cuda.get_device_capability(); torch.cuda.mem_get_info(); torch.cuda.memory_summary(); torch.cuda.empty_cache()
    torch.cuda.manual_seed_all(0); torch.cuda.get_device_properties(0).total_memory; torch.cuda.is_bf16_supported()
    torch.cuda.nvtx.range_push("x"); torch.cuda.nvtx.range_pop(); torch.cuda.current_device(); torch.cuda.device_count()
@case("generator")
def _():
    g = torch.Generator(device=d); g.manual_seed(1); torch.randn(4, device=d, generator=g); torch.randperm(10, device=d)
@case("streams")
def _():
    s = torch.cuda.Stream(); x = torch.randn(100, device=d)
    with torch.cuda.stream(s):
        y = x * 2
    torch.cuda.current_stream().wait_stream(s); y.record_stream(torch.cuda.current_stream()); torch.cuda.synchronize()
@case("ckpt_reentrant")
def _():
    m = nn.Linear(32, 32).to(d); x = torch.randn(4, 32, device=d, requires_grad=True)
    checkpoint(m, x, use_reentrant=True).sum().backward()
@case("fused_adamw_bf16")
def _():
    m = nn.Linear(32, 32).to(d); opt = torch.optim.AdamW(m.parameters(), fused=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        m(torch.randn(4, 32, device=d)).float().sum().backward()
    opt.step()
@case("capturable_adam")
def _():
    m = nn.Linear(32, 32).to(d); opt = torch.optim.Adam(m.parameters(), capturable=True)
    m(torch.randn(4, 32, device=d)).sum().backward(); opt.step()
@case("sdpa_bool_mask")
def _():
    q = torch.randn(2, 4, 16, 32, device=d, dtype=torch.bfloat16, requires_grad=True)
    mask = torch.ones(16, 16, dtype=torch.bool, device=d).tril()
    F.scaled_dot_product_attention(q, q, q, attn_mask=mask).sum().backward()
@case("sdpa_kernel_ctx")
def _():
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q = torch.randn(2, 4, 16, 64, device=d, dtype=torch.bfloat16)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        F.scaled_dot_product_attention(q, q, q, is_causal=True)
@case("old_amp_api")
def _():
    with torch.cuda.amp.autocast():
        nn.Linear(8, 8).to(d)(torch.randn(2, 8, device=d))
    torch.cuda.amp.GradScaler()
@case("pin_memory")
def _():
    x = torch.randn(100).pin_memory(); x.to(d, non_blocking=True)
@case("compile")
def _():
    m = torch.compile(nn.Linear(8, 8).to(d)); m(torch.randn(2, 8, device=d)).sum().backward()
@case("flex_attention")
def _():
    from torch.nn.attention.flex_attention import flex_attention
    q = torch.randn(1, 2, 128, 64, device=d, dtype=torch.bfloat16)
    flex_attention(q, q, q)
@case("channels_last_amp_conv")
def _():
    m = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16), nn.SiLU()).to(d).to(memory_format=torch.channels_last)
    with torch.autocast("cuda", dtype=torch.float16):
        m(torch.randn(2, 3, 32, 32, device=d).to(memory_format=torch.channels_last)).sum().backward()
@case("spectral_norm")
def _():
    m = nn.utils.parametrizations.spectral_norm(nn.Linear(8, 8).to(d)); m(torch.randn(2, 8, device=d)).sum().backward()
@case("ema_swa")
def _():
    m = nn.Linear(8, 8).to(d); ema = torch.optim.swa_utils.AveragedModel(m, multi_avg_fn=torch.optim.swa_utils.get_ema_multi_avg_fn(0.99))
    ema.update_parameters(m)
@case("grad_clip_value_foreach")
def _():
    m = nn.Linear(8, 8).to(d); m(torch.randn(2, 8, device=d)).sum().backward()
    torch.nn.utils.clip_grad_value_(m.parameters(), 0.5); torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0, foreach=True)
@case("torch_func_vmap_grad")
def _():
    from torch.func import grad, vmap
    w = torch.randn(8, device=d)
    vmap(grad(lambda x: (x * w).sum()))(torch.randn(4, 8, device=d))

m = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)).cuda()
@case("inference_mode")
def _():
    m.eval()
    with torch.inference_mode():
        y = m(torch.randn(8, 16, device="cuda")); z = y * 2; z.sum().item()
    m.train()
@case("no_grad_eval")
def _():
    with torch.no_grad(): m(torch.randn(8, 16, device="cuda"))
@case("gradient_penalty")
def _():
    x = torch.randn(8, 16, device="cuda", requires_grad=True)
    out = m(x)
    g, = torch.autograd.grad(out.sum(), x, create_graph=True)
    ((g.norm(2, dim=1) - 1) ** 2).mean().backward()
@case("gan_two_opts_retain")
def _():
    G = nn.Linear(8, 16).cuda(); D = nn.Linear(16, 1).cuda()
    og, od = torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters())
    fake = G(torch.randn(4, 8, device="cuda"))
    ld = F.binary_cross_entropy_with_logits(D(fake.detach()), torch.zeros(4, 1, device="cuda")); ld.backward(); od.step(); od.zero_grad()
    lg = F.binary_cross_entropy_with_logits(D(fake), torch.ones(4, 1, device="cuda")); lg.backward(retain_graph=True); og.step()
@case("hooks_forward_backward")
def _():
    h1 = m[0].register_forward_hook(lambda mod, i, o: o * 1.0)
    h2 = m[0].register_full_backward_hook(lambda mod, gi, go: None)
    m(torch.randn(4, 16, device="cuda")).sum().backward(); h1.remove(); h2.remove()
@case("detect_anomaly")
def _():
    with torch.autograd.detect_anomaly(check_nan=False):
        m(torch.randn(4, 16, device="cuda")).sum().backward()
@case("set_detect_nan_checks")
def _():
    loss = m(torch.randn(4, 16, device="cuda")).sum()
    if not torch.isfinite(loss): raise RuntimeError("nan")
    loss.backward()
@case("torch_utils_benchmark_timer")
def _():
    import torch.utils.benchmark as tb
    t = tb.Timer("m(x)", globals={"m": m, "x": torch.randn(4, 16, device="cuda")}); t.timeit(3)
@case("cuda_event_timing")
def _():
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); m(torch.randn(4, 16, device="cuda")); e.record(); torch.cuda.synchronize(); s.elapsed_time(e)
@case("max_memory_allocated_reset")
def _():
    torch.cuda.reset_peak_memory_stats(); torch.cuda.max_memory_allocated(); torch.cuda.memory_reserved(); torch.cuda.memory_stats()
@case("profiler")
def _():
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]) as p:
        m(torch.randn(4, 16, device="cuda"))
    p.key_averages()

@case("numpy_metrics")
def _():
    import numpy as np

    preds = m(torch.randn(8, 16, device="cuda")).argmax(-1).cpu().numpy()
    float(np.mean(preds == np.zeros(8, dtype=np.int64)))


@case("checkpoint_and_resume")
def _():
    import os
    import tempfile

    opt = torch.optim.AdamW(m.parameters())
    m(torch.randn(4, 16, device="cuda")).sum().backward()
    opt.step()
    path = os.path.join(tempfile.mkdtemp(), "ckpt.pt")
    torch.save({"model": m.state_dict(), "opt": opt.state_dict()}, path)
    ckpt = torch.load(path, map_location="cuda")
    m.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["opt"])
    m(torch.randn(4, 16, device="cuda")).sum().backward()
    opt.step()

@case("device_generic_streams_events")
def _():
    # Device-agnostic code: torch.accelerator and the device-generic torch.Stream / torch.Event (PyTorch 2.5).
    dev = torch.accelerator.current_accelerator()
    s, start, end = torch.Stream(dev), torch.Event(dev, enable_timing=True), torch.Event(enable_timing=True)
    assert isinstance(s, torch.Stream) and isinstance(torch.cuda.current_stream(), torch.Stream)
    x = torch.randn(100, device=dev)
    start.record()
    with torch.cuda.stream(s):
        x.mul_(2)
    end.record(); torch.accelerator.current_stream().wait_stream(s); end.synchronize()
    start.elapsed_time(end); torch.accelerator.synchronize()
@case("tf32_fp32_precision_api")  # last: once a script uses this API, PyTorch refuses reads of the older flags
def _():
    torch.backends.cuda.matmul.fp32_precision = "tf32"
    torch.backends.cudnn.conv.fp32_precision = "tf32"
    a = torch.randn(64, 64, device=d)
    a @ a; F.conv2d(torch.randn(1, 3, 8, 8, device=d), torch.randn(4, 3, 3, 3, device=d))


failed = {k: v for k, v in results.items() if v != "ok"}
for k, v in failed.items():
    print(f"{k}: {v}", flush=True)
print(f"training patterns: {len(results) - len(failed)} of {len(results)} cases ran", flush=True)
