"""Convolution backward with grad_output and input in different memory formats, on a real GPU.

    python3 benchmarks/gpu/conv_layout_probe.py > OUT.json

A model that permutes to NHWC around a convolution (ConvNeXt's block: depthwise conv, permute,
LayerNorm and Linear in NHWC, permute back) hands the convolution's backward a channels-last
grad_output while the convolution's input is NCHW. This times one depthwise 7x7 and one dense 3x3
convolution backward (bf16, shapes of no validation workload) in the four combinations of the two
formats, with CUDA events after warm-up, and names the three kernels that took most of each under
torch.profiler. Prints JSON.
"""

from __future__ import annotations

import json
import statistics
import sys

import torch

CASES = {
    "depthwise_7x7": dict(n=32, c_in=128, c_out=128, hw=48, k=7, groups=128),
    "dense_3x3": dict(n=32, c_in=128, c_out=128, hw=48, k=3, groups=1),
}


def _tensor(shape, channels_last: bool) -> torch.Tensor:
    t = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    return t.contiguous(memory_format=torch.channels_last) if channels_last else t.contiguous()


def _time(fn, repeats: int = 30) -> float:
    for _ in range(5):
        fn()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0)
    return statistics.median(times)


def main() -> None:
    out = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version(), "rows": []}
    for name, c in CASES.items():
        n, c_in, c_out, hw, k, groups = c["n"], c["c_in"], c["c_out"], c["hw"], c["k"], c["groups"]
        for grad_cl in (False, True):
            for input_cl in (False, True):
                x = _tensor((n, c_in, hw, hw), input_cl)
                w = _tensor((c_out, c_in // groups, k, k), input_cl)
                grad = _tensor((n, c_out, hw, hw), grad_cl)

                def backward():
                    torch.ops.aten.convolution_backward(
                        grad, x, w, [c_out], [1, 1], [k // 2, k // 2], [1, 1], False, [0, 0], groups,
                        [True, True, True])

                us = _time(backward)
                with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                    backward()
                    torch.cuda.synchronize()
                kernels = sorted(((e.device_time_total, e.key) for e in prof.key_averages()), reverse=True)[:3]
                out["rows"].append({
                    "case": name, **c, "grad_output": "channels_last" if grad_cl else "nchw",
                    "input": "channels_last" if input_cl else "nchw", "median_us": round(us, 2),
                    "top_kernels": [{"us": round(t, 2), "name": key[:160]} for t, key in kernels],
                })
                print(name, out["rows"][-1]["grad_output"], out["rows"][-1]["input"], round(us, 1), file=sys.stderr)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
