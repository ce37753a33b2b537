"""Which fused attention op does PyTorch pick on this GPU? Ground truth for maya/emulator/sdpa.py.

Run on a machine with a real NVIDIA GPU (from the repository root):
    python3 benchmarks/gpu/sdpa_backend_probe.py --out benchmarks/gpu/sdpa_backends_h200.json
For each case it runs F.scaled_dot_product_attention forward and backward under torch.profiler and
records the aten ops whose names contain "scaled_dot_product" or "attention".
"""

import argparse
import json
import socket

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

CASES = [
    # name, dtype, heads_q, heads_kv, head_dim, causal, mask kind, mask requires grad, enable_gqa
    ("bf16_causal_d64", torch.bfloat16, 12, 12, 64, True, None, False, False),
    ("bf16_causal_d128", torch.bfloat16, 16, 16, 128, True, None, False, False),
    ("fp16_causal_d64", torch.float16, 12, 12, 64, True, None, False, False),
    ("bf16_noncausal_d64", torch.bfloat16, 12, 12, 64, False, None, False, False),
    ("bf16_gqa_enable_gqa", torch.bfloat16, 16, 4, 128, True, None, False, True),
    ("bf16_float_mask", torch.bfloat16, 12, 12, 64, False, "float", False, False),
    ("bf16_bool_mask", torch.bfloat16, 12, 12, 64, False, "bool", False, False),
    ("bf16_float_mask_requires_grad", torch.bfloat16, 12, 12, 64, False, "float", True, False),
    ("fp32_causal_d64", torch.float32, 12, 12, 64, True, None, False, False),
    ("bf16_causal_d256", torch.bfloat16, 8, 8, 256, True, None, False, False),
]


def run_case(dtype, hq, hkv, d, causal, mask_kind, mask_grad, gqa, batch=4, seq=512):
    q = torch.randn(batch, hq, seq, d, device="cuda", dtype=dtype, requires_grad=True)
    k = torch.randn(batch, hkv, seq, d, device="cuda", dtype=dtype, requires_grad=True)
    v = torch.randn(batch, hkv, seq, d, device="cuda", dtype=dtype, requires_grad=True)
    mask = None
    if mask_kind == "float":
        mask = torch.randn(1, hq, seq, seq, device="cuda", dtype=dtype, requires_grad=mask_grad)
    elif mask_kind == "bool":
        mask = torch.rand(1, 1, seq, seq, device="cuda") > 0.1
    kwargs = {"enable_gqa": True} if gqa else {}
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal, **kwargs)
        out.sum().backward()
        torch.cuda.synchronize()
    names = sorted({e.name for e in prof.events() if "scaled_dot_product" in e.name or "attention" in e.name})
    return names


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    args = p.parse_args()
    results = {}
    for name, *case in CASES:
        try:
            results[name] = {"ops": run_case(*case)}
        except Exception as e:  # record what fails, as a GPU would for a user
            results[name] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0]}"}
        print(name, results[name])
    env = {
        "gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(), "host": socket.gethostname(),
        "command": "python3 benchmarks/gpu/sdpa_backend_probe.py --out " + args.out,
    }
    with open(args.out, "w") as f:
        json.dump({"environment": env, "cases": results}, f, indent=2)


if __name__ == "__main__":
    main()
