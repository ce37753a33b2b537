"""Training steps run eagerly and replayed from a CUDA graph, timed with CUDA events (median of REPS
timings of STEPS steps each, after warm-up).

The same script gives Maya's predictions: under `maya emulate`, `Event.elapsed_time` answers the
simulated time between the two records (maya/event_timing.py), host included.

    python benchmarks/gpu/cuda_graph_probe.py --out cuda_graph_h200.json          # on the GPU
    maya emulate benchmarks/gpu/cuda_graph_probe.py --out cuda_graph_maya.json     # Maya's predictions
    python benchmarks/cuda_graph_check.py cuda_graph_h200.json cuda_graph_maya.json

Each model trains with SGD (no optimizer state, so a captured step needs no `capturable` flag) on a
fixed batch: `graph` captures the whole step (forward, backward, `optimizer.step()`) as PyTorch's
CUDA graphs documentation does and replays it; `callables` wraps the model with
`torch.cuda.make_graphed_callables` (forward and backward graphs) and steps the optimizer eagerly.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

MODELS = {
    # name: (batch, input width, hidden width, hidden layers, output width)
    "mlp_small": (16, 256, 256, 4, 64),
    "mlp_deep": (64, 1024, 1024, 24, 256),
    "mlp_wide": (2048, 4096, 4096, 6, 1024),
}
MODES = ("eager", "graph", "callables")
STEPS, REPS = 10, 7


def build(name: str):
    batch, d_in, hidden, layers, d_out = MODELS[name]
    torch.manual_seed(0)
    blocks = [torch.nn.Linear(d_in, hidden), torch.nn.ReLU()]
    for _ in range(layers - 1):
        blocks += [torch.nn.Linear(hidden, hidden), torch.nn.ReLU()]
    model = torch.nn.Sequential(*blocks, torch.nn.Linear(hidden, d_out)).cuda()
    x = torch.randn(batch, d_in, device="cuda")
    target = torch.randn(batch, d_out, device="cuda")
    return model, x, target


def stepper(name: str, mode: str):
    """A function that runs one training step of `name` in `mode`, after its warm-up and capture."""
    model, x, target = build(name)
    loss_fn = torch.nn.MSELoss()
    if mode == "callables":
        model = torch.cuda.make_graphed_callables(model, (x,))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model(x), target).backward()
        optimizer.step()

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    if mode != "graph":
        return step
    graph = torch.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        loss_fn(model(x), target).backward()
        optimizer.step()
    return graph.replay


def timed_step_ms(step) -> float:
    step()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(STEPS):
            step()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / STEPS)
    return statistics.median(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    args = p.parse_args()
    rows, started = [], time.perf_counter()
    for name in MODELS:
        for mode in MODES:
            rows.append({"model": name, "mode": mode, "step_ms": timed_step_ms(stepper(name, mode))})
            print(f"{name:10s} {mode:9s} {rows[-1]['step_ms']:8.3f} ms", flush=True)
    env = {
        "gpu_name": torch.cuda.get_device_name(), "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda, "date": time.strftime("%Y-%m-%d"),
        "steps": STEPS, "reps": REPS, "seconds": round(time.perf_counter() - started, 1),
    }
    with open(args.out, "w") as f:
        json.dump({"env": env, "models": MODELS, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
