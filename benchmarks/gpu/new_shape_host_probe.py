"""Host time of an op whose shape the process has not run before, against the same op on a shape it has.

cuBLAS chooses a GEMM's kernel with a heuristic query whose answer it caches per problem shape, and
cuDNN builds an execution plan per convolution and attention shape (PyTorch caches the plans). A
training step whose shapes repeat pays those costs once; a step whose shapes depend on the data (the
tokens each expert of a mixture-of-experts layer receives) pays them on every call. This probe times,
on the host, chains of calls of one op:

- `repeat`: one shape, run before (the cached case);
- `new`: a shape never run before in the process, a different one on every call;
- `revisit`: the `new` shapes again, in the same order (is the first call's cost cached?).

Each chain issues its calls without synchronising (the GPU work of each call is a few microseconds,
shorter than its launch, and the chains are short enough that the launch queue never fills), so the
host time per call is (perf_counter after the chain - before it) / calls, the device synchronised
before each chain. Every chain's figure is the median of `--trials` chains. `aten_op_us` (x.add_(1) on a
one-element tensor, as `maya profile --families host` measures it) is timed in the same process, so a
lease's figures can be scaled to another's.

Only the standard library and torch are imported. On the GPU machine, from the repository root:

    python3 benchmarks/gpu/new_shape_host_probe.py --out OUT_DIR

writes OUT_DIR/new_shape_host.json (about a minute); with --backward, OUT_DIR/new_shape_host_backward.json:
the convolution and the attention forward and backward together (torch.autograd.grad of the output's
sum), bfloat16, whose extra less the forward case's is the backward's.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F

CALLS = 100
"""Calls per timed chain."""


def _chain_us(fn, args_list) -> float:
    """Host microseconds per call of `fn(*args)` over `args_list`, issued back to back."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for args in args_list:
        fn(*args)
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) * 1e6 / len(args_list)


def aten_op_us(trials: int) -> float:
    x = torch.zeros(1, device="cuda")
    for _ in range(100):
        x.add_(1)
    return statistics.median(_chain_us(lambda: x.add_(1), [()] * 1000) for _ in range(trials))


def _cases(dtype: torch.dtype, backward: bool = False):
    """name -> (fn, make_args(size)): `size` is the op's varying dimension (a GEMM's M or K, an
    attention's sequence length, a convolution's image height). With `backward`, the convolution and
    the attention forward and backward together instead."""
    dev = "cuda"
    w = torch.randn(2048, 768, device=dev, dtype=dtype)
    bias = torch.randn(2048, device=dev, dtype=dtype)
    big = torch.randn(4096, 2048, device=dev, dtype=dtype)
    x768 = torch.randn(4096, 768, device=dev, dtype=dtype)
    conv_w = torch.randn(32, 32, 3, 3, device=dev, dtype=dtype).to(memory_format=torch.channels_last)
    qkv = torch.randn(1, 4, 4096, 64, device=dev, dtype=dtype)
    cases = {
        # forward of an expert's first linear: x [M, 768] @ w.T -> [M, 2048] (M varies)
        "linear_m": (F.linear, lambda m: (x768[:m], w)),
        "addmm_m": (F.linear, lambda m: (x768[:m], w, bias)),
        # an expert's last linear, M varying: [M, 2048] @ [2048, 768]
        "mm_m": (torch.mm, lambda m: (big[:m], w)),
        # a weight gradient: [2048, M] @ [M, 768] (K varies)
        "mm_k": (torch.mm, lambda m: (big[:m].t(), x768[:m])),
        # attention with sequence length S (cuDNN on Hopper for bf16)
        "sdpa_s": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                   lambda s: (qkv[:, :, :s], qkv[:, :, :s], qkv[:, :, :s])),
        # a channels-last 3x3 convolution on a [2, 32, H, 32] image
        "conv_h": (F.conv2d, lambda h: (torch.empty(2, 32, h, 32, device=dev, dtype=dtype)
                                        .to(memory_format=torch.channels_last), conv_w, None, 1, 1)),
    }
    if not backward:
        return cases
    conv_wg = conv_w.detach().requires_grad_()
    qkv_g = qkv.detach().requires_grad_()

    def conv_both(x):
        return torch.autograd.grad(F.conv2d(x, conv_wg, None, 1, 1).sum(), (x, conv_wg))

    def sdpa_both(q, k, v):
        return torch.autograd.grad(F.scaled_dot_product_attention(q, k, v, is_causal=True).sum(), (q, k, v))

    # forward and backward: less the forward case, the backward's plans (data and weight gradients)
    return {
        "conv_h_fwd_bwd": (conv_both, lambda h: (torch.empty(2, 32, h, 32, device=dev, dtype=dtype)
                                                 .to(memory_format=torch.channels_last).requires_grad_(),)),
        "sdpa_s_fwd_bwd": (sdpa_both, lambda s: (qkv_g[:, :, :s], qkv_g[:, :, :s], qkv_g[:, :, :s])),
    }


def measure(trials: int, dtype: torch.dtype, backward: bool = False) -> dict:
    out = {}
    cases = _cases(dtype, backward)
    for name, (fn, make) in cases.items():
        lo = 8 if name.startswith("conv_h") else 1024
        # Sizes are disjoint between uses: warm-up (kernels loaded), then one fresh band per trial.
        fn(*make(lo))
        warm = [make(lo + 1 + i) for i in range(CALLS)]
        first_ever = _chain_us(fn, warm)
        repeat = [make(lo)] * CALLS
        rep, new, revisit = [], [], []
        nxt = lo + 1 + CALLS
        for _ in range(trials):
            rep.append(_chain_us(fn, repeat))
            fresh = [make(nxt + i) for i in range(CALLS)]
            nxt += CALLS
            new.append(_chain_us(fn, fresh))
            revisit.append(_chain_us(fn, fresh))
        out[name] = {
            "repeat_us": statistics.median(rep), "new_us": statistics.median(new),
            "revisit_us": statistics.median(revisit), "first_band_us": first_ever,
            "new_minus_repeat_us": statistics.median(new) - statistics.median(rep),
            "sizes_used": [lo, nxt - 1],
        }
        print(name, {k: round(v, 1) if isinstance(v, float) else v for k, v in out[name].items()}, flush=True)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--backward", action="store_true",
                   help="time the convolution and attention forward+backward (bfloat16 only) instead")
    args = p.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    torch.backends.cudnn.benchmark = False
    result = {
        "gpu_name": torch.cuda.get_device_name(), "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda, "cudnn_version": torch.backends.cudnn.version(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "calls_per_chain": CALLS, "trials": args.trials, "method": __doc__.split("\n\n")[1],
        "aten_op_us": aten_op_us(args.trials),
    }
    print("aten_op_us", round(result["aten_op_us"], 2), flush=True)
    result["bfloat16"] = measure(args.trials, torch.bfloat16, args.backward)
    if not args.backward:
        result["float32"] = measure(args.trials, torch.float32)
    result["aten_op_us_after"] = aten_op_us(args.trials)
    path = Path(args.out) / ("new_shape_host_backward.json" if args.backward else "new_shape_host.json")
    path.write_text(json.dumps(result, indent=1))
    print("wrote", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
