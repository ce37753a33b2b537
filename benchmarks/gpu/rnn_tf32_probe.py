"""Does cuDNN's fp32 LSTM run faster with TF32 allowed (PyTorch's default) than without?

Maya's RNN profiles (maya/estimator/data/h200/rnn.parquet) were timed with TF32 off, while
`torch.backends.cudnn.allow_tf32` is True by default, so a real fp32 LSTM (the validation suite's
lstm_lm_fp32) may run its GEMMs on tensor cores. This times one forward+backward of the suite's
LSTM shape both ways with CUDA events (median of 20 after 5 warm-up runs).

    python benchmarks/gpu/rnn_tf32_probe.py --out rnn_tf32_h200.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
import torch.nn as nn

SHAPES = ((128, 64, 1024, 1024, 2), (35, 20, 650, 650, 2), (128, 32, 512, 512, 1))
"""(seq, batch, input size, hidden size, layers)."""


def time_ms(lstm: nn.LSTM, x: torch.Tensor) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for i in range(25):
        torch.cuda.synchronize()
        start.record()
        out, _ = lstm(x)
        out.float().sum().backward()
        end.record()
        torch.cuda.synchronize()
        if i >= 5:
            samples.append(start.elapsed_time(end))
    return statistics.median(samples)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    args = p.parse_args()
    rows = []
    for seq, batch, inp, hidden, layers in SHAPES:
        lstm = nn.LSTM(inp, hidden, layers, dropout=0.5 if layers > 1 else 0.0).cuda()
        x = torch.randn(seq, batch, inp, device="cuda", requires_grad=True)
        row = {"seq": seq, "batch": batch, "input": inp, "hidden": hidden, "layers": layers}
        for allow in (False, True):
            torch.backends.cudnn.allow_tf32 = allow
            row[f"fwd_bwd_ms_tf32_{'on' if allow else 'off'}"] = time_ms(lstm, x)
        rows.append(row)
        print(json.dumps(row), flush=True)
    with open(args.out, "w") as f:
        json.dump({"command": "python benchmarks/gpu/rnn_tf32_probe.py --out rnn_tf32_h200.json",
                   "gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
                   "cudnn": torch.backends.cudnn.version(), "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                   "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
