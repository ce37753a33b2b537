"""Host (CPU-side) launch overhead of eager PyTorch, measured on the real GPU machine.

The simulator needs to know how long the Python thread spends issuing each op, because small
models are host-bound: the GPU waits for launches. Each category runs a long chain of tiny ops
whose GPU work (a few microseconds on one element) is shorter than their launch, so the wall
time per op is the host cost.

Only torch and the standard library are imported: this runs on the GPU profiling machine.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

logger = logging.getLogger(__name__)

TINY_FEATURES = 16
"""Width of the tiny linear layers: their kernels take a few microseconds at most."""

MODULE_DEPTH = 8
"""Linear+ReLU blocks in the tiny module stack."""

BACKWARD_LONG_DEPTH = 64
"""Linear+ReLU blocks of the longer stack whose backward, against MODULE_DEPTH's, gives the per-op
backward cost apart from the engine's fixed cost per call."""

RNN_STEPS = 256
"""Time steps of the tiny LSTM whose host time per step is measured (`rnn_cell_*_us`)."""

METHOD = (
    "Wall time (time.perf_counter, device synchronised before and after) of a chain of tiny ops "
    "divided by the number of kernel (non-view) aten ops in it, counted with a TorchDispatchMode "
    "in a separate untimed run. Categories: aten_op_us = x.add_(1) on a 1-element tensor from "
    "Python; functional_linear_us = F.linear on [1, 16] x [16, 16]; module_forward_op_us = "
    "forward of a stack of nn.Linear(16, 16)+ReLU modules under torch.no_grad(), per op; "
    "module_forward_grad_op_us = the same forward with grad enabled (the autograd graph recorded), "
    "per op; autograd_backward_op_us and autograd_backward_call_us = "
    "slope and intercept of the host time of loss.backward() of that stack (8 blocks) and of a "
    "64-block one against their backward ops, each the fastest of 3 chains of (forward + backward) "
    "less the fastest of 3 of the forward, the parameters' gradients set to None before each call "
    "(before 2026-12-06 the figure was one 8-block chain whose gradients accumulated from call to "
    "call, an add kernel per parameter that its op count did not include, and held the fixed cost), the "
    "line measured again (up to 3 lines) while its intercept reads negative; optimizer_foreach_per_tensor_us and "
    "optimizer_step_fixed_us = slope and intercept of Adam(foreach=True).step() time against the "
    "number of parameter tensors; checkpoint_region_us and checkpoint_per_op_us = fixed and "
    "per-recomputed-op extra host time of a torch.utils.checkpoint.checkpoint(use_reentrant=False) "
    "region over the plain step (less the recomputed ops charged as backward ops), from a line "
    "through two block kinds (Linear+ReLU, and a small transformer block); "
    "checkpoint_forward_region_us and checkpoint_forward_per_op_us = the same line through the "
    "checkpointed forward's extra host time over the plain forward (grad enabled), the share a region "
    "pays before backward recomputes it; "
    "rnn_cell_forward_us and rnn_cell_backward_us = host time per time step of a one-layer "
    "nn.LSTM(16, 16) over 256 steps of batch 1, forward and (forward + backward) - forward, each the "
    "fastest of 3 timed chains: cuDNN "
    "launches kernels for every step, so an RNN's host time grows with its steps; "
    "conv_forward_extra_us, conv_backward_extra_us, batch_norm_forward_extra_us and "
    "batch_norm_backward_extra_us = host time per call of F.conv2d (3x3, [2, 16, 8, 8]) and of a "
    "training-mode F.batch_norm on a tiny bf16 (float32 off CUDA) channels-last input with grad, "
    "beyond a one-launch call: F.linear on the same grad state for the forward, "
    "for the backward, torch.autograd.grad of the call less its forward, beyond that of a one-op "
    "backward (torch.relu's) through the same call, which pays the call's fixed engine cost, "
    "each chain the fastest of 3, floored at 0: cuDNN's plan lookup and the several kernels a batch "
    "norm launches; "
    "synchronize_us = torch.cuda.synchronize() on an idle device."
)
"""How the numbers in host_overhead.json were measured."""


class _OpCounter(TorchDispatchMode):
    """Counts aten ops that reach the dispatcher, views separately."""

    def __init__(self) -> None:
        super().__init__()
        self.kernel_ops = 0
        self.view_ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if getattr(func, "is_view", False):
            self.view_ops += 1
        else:
            self.kernel_ops += 1
        return func(*args, **(kwargs or {}))


def measure_host_overhead(device: str | torch.device = "cuda", *, iterations: int = 2000) -> dict[str, Any]:
    """Host microseconds per op for a few kinds of eager PyTorch calls.

    Args:
        device: the device whose launch path is measured ("cuda" on the GPU machine).
        iterations: repetitions of each timed chain.

    Returns:
        {"per_op_us": {category: microseconds}, "kernel_ops": {category: ops per timed call},
        "method": str, "device": str, "iterations": int}.
    """
    device = torch.device(device)
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    per_op_us: dict[str, float] = {}
    kernel_ops: dict[str, int] = {}

    def record(name: str, step: Callable[[], Any], n: int) -> None:
        ops = _count_ops(step)
        per_op_us[name] = _time_chain(step, n, sync) * 1e6 / (n * max(ops, 1))
        kernel_ops[name] = ops

    x = torch.zeros(1, device=device)
    record("aten_op_us", lambda: x.add_(1), iterations)

    inp = torch.randn(1, TINY_FEATURES, device=device)
    weight = torch.randn(TINY_FEATURES, TINY_FEATURES, device=device)
    bias = torch.randn(TINY_FEATURES, device=device)
    record("functional_linear_us", lambda: torch.nn.functional.linear(inp, weight, bias), iterations)

    model = _linear_relu_stack(MODULE_DEPTH, device)
    with torch.no_grad():
        record("module_forward_op_us", lambda: model(inp), iterations // MODULE_DEPTH)
    # The same forward as training runs it, recording the autograd graph (measured, not yet charged:
    # `host_cost` scales the no-grad figure by the in-situ factor instead).
    record("module_forward_grad_op_us", lambda: model(inp), iterations // MODULE_DEPTH)

    n = max(iterations // MODULE_DEPTH, 10)
    call_us, op_us, backward_ops = backward_costs_us(device, n, sync)
    per_op_us["autograd_backward_op_us"] = op_us
    per_op_us["autograd_backward_call_us"] = call_us
    kernel_ops["autograd_backward_op_us"] = backward_ops

    fixed, per_op, forward_fixed, forward_per_op = _checkpoint_costs_us(device, n, sync, per_op_us["autograd_backward_op_us"])
    per_op_us["checkpoint_region_us"] = fixed
    per_op_us["checkpoint_per_op_us"] = per_op
    per_op_us["checkpoint_forward_region_us"] = max(forward_fixed, 0.0)  # a line through two noisy points
    per_op_us["checkpoint_forward_per_op_us"] = max(forward_per_op, 0.0)

    step_us = {}
    for n_params in (16, 128):
        params = [torch.nn.Parameter(torch.randn(TINY_FEATURES, device=device)) for _ in range(n_params)]
        for p in params:
            p.grad = torch.randn_like(p)
        optimizer = torch.optim.Adam(params, lr=1e-3, foreach=True)
        steps = max(iterations // 20, 10)
        step_us[n_params] = _time_chain(optimizer.step, steps, sync) * 1e6 / steps
    fixed, per_tensor = _line(list(step_us.items()))
    per_op_us["optimizer_foreach_per_tensor_us"] = per_tensor
    per_op_us["optimizer_step_fixed_us"] = fixed

    rnn = torch.nn.LSTM(TINY_FEATURES, TINY_FEATURES).to(device)
    sequence = torch.randn(RNN_STEPS, 1, TINY_FEATURES, device=device)
    n_rnn = max(iterations // RNN_STEPS, 5)
    # The backward figure is a difference of two chains: the fastest of three timings of each keeps
    # a busy CPU's interruptions (which only add time) out of it.
    rnn_forward = min(_time_chain(lambda: rnn(sequence)[0].sum(), n_rnn, sync) for _ in range(3))
    rnn_both = min(_time_chain(lambda: rnn(sequence)[0].sum().backward(), n_rnn, sync) for _ in range(3))
    per_op_us["rnn_cell_forward_us"] = rnn_forward * 1e6 / (n_rnn * RNN_STEPS)
    per_op_us["rnn_cell_backward_us"] = (rnn_both - rnn_forward) * 1e6 / (n_rnn * RNN_STEPS)

    per_op_us.update(_layer_extras_us(device, max(iterations // 10, 10), sync))

    if device.type == "cuda":
        per_op_us["synchronize_us"] = _time_chain(sync, iterations, lambda: None) * 1e6 / iterations

    logger.info("host overhead on %s (us): %s", device, {k: round(v, 2) for k, v in per_op_us.items()})
    return {
        "per_op_us": per_op_us,
        "kernel_ops": kernel_ops,
        "method": METHOD,
        "device": str(device),
        "iterations": iterations,
    }


def _linear_relu_stack(depth: int, device: torch.device) -> torch.nn.Sequential:
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(TINY_FEATURES, TINY_FEATURES), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers).to(device)


def _training_step(model: torch.nn.Module, inp: torch.Tensor, *, backward: bool) -> Callable[[], None]:
    """A step of `model` on `inp` that unsets the parameters' gradients first, as
    `zero_grad(set_to_none=True)` leaves them, then runs the forward and the loss, and the backward
    if `backward`: every call issues the same ops."""
    params = list(model.parameters())

    def step() -> None:
        for p in params:
            p.grad = None
        loss = model(inp).sum()
        if backward:
            loss.backward()

    return step


BACKWARD_ATTEMPTS = 3
"""Measurements of the backward line `backward_costs_us` makes at most while its fixed cost reads
negative (an impossible line: its per-op slope is inflated)."""


def backward_costs_us(device: torch.device, n: int, sync: Callable[[], None]) -> tuple[float, float, int]:
    """(fixed per loss.backward() call, per backward op, backward ops of the MODULE_DEPTH stack) host
    microseconds of the autograd engine running a Linear+ReLU stack's backward.

    Each timed call starts with the parameters' gradients unset, as a training step after
    `zero_grad(set_to_none=True)` does, and the ops are counted in that state: with gradients kept
    from the call before, every parameter's AccumulateGrad would add into its gradient, a kernel per
    parameter that the count of a first call does not see. Backward time is (forward + backward) -
    forward, each the fastest of 3 chains (a busy CPU's interruptions only add time); a line through
    stacks of MODULE_DEPTH and BACKWARD_LONG_DEPTH blocks separates the per-op share, which a model's
    hundreds of backward ops pay, from the engine's fixed cost per call. A line with a negative fixed
    cost (one H100's, session 50: -188.9 us, its per-op figure 1.4x the other H100's) is measured
    again, up to BACKWARD_ATTEMPTS lines (`first_plausible_line`).
    """
    inp = torch.randn(1, TINY_FEATURES, device=device)
    stacks = []
    for depth in (MODULE_DEPTH, BACKWARD_LONG_DEPTH):
        model = _linear_relu_stack(depth, device)
        both, fwd = _training_step(model, inp, backward=True), _training_step(model, inp, backward=False)
        stacks.append((_count_ops(both) - _count_ops(fwd), both, fwd, max(n * MODULE_DEPTH // depth, 10)))

    def line() -> tuple[float, float]:
        points = []
        for ops, both, fwd, chains in stacks:
            both_s = min(_time_chain(both, chains, sync) for _ in range(3))
            fwd_s = min(_time_chain(fwd, chains, sync) for _ in range(3))
            points.append((ops, (both_s - fwd_s) * 1e6 / chains))
        return _line(points)

    call_us, per_op = first_plausible_line(line, BACKWARD_ATTEMPTS)
    return call_us, per_op, stacks[0][0]


def first_plausible_line(measure: Callable[[], tuple[float, float]], attempts: int) -> tuple[float, float]:
    """The first (intercept, slope) of up to `attempts` calls of `measure` whose intercept (a fixed
    cost) is not negative; if none, the one with the least slope (the least inflated), logged."""
    lines = []
    for _ in range(attempts):
        lines.append(measure())
        if lines[-1][0] >= 0:
            return lines[-1]
    logger.warning("backward host line: a negative fixed cost in all %d measurements %s; keeping the least slope",
                   attempts, [(round(a, 1), round(b, 2)) for a, b in lines])
    return min(lines, key=lambda line: line[1])


class _AttentionBlock(torch.nn.Module):
    """A pre-norm transformer block on tiny tensors: enough ops per region to separate the per-op
    share of a checkpoint region's host cost from its fixed share."""

    def __init__(self, width: int = TINY_FEATURES, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(width), torch.nn.LayerNorm(width)
        self.qkv, self.proj = torch.nn.Linear(width, 3 * width), torch.nn.Linear(width, width)
        self.fc, self.out = torch.nn.Linear(width, 4 * width), torch.nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = (y.view(b, t, self.heads, c // self.heads).transpose(1, 2) for y in self.qkv(self.ln1(x)).split(c, 2))
        x = x + self.proj(torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, c))
        return x + self.out(torch.nn.functional.gelu(self.fc(self.ln2(x))))


def _checkpoint_costs_us(
    device: torch.device, n: int, sync: Callable[[], None], backward_op_us: float
) -> tuple[float, float, float, float]:
    """(fixed, per recomputed op, forward's fixed, forward's per op) host cost of a
    `torch.utils.checkpoint.checkpoint` region (use_reentrant=False) beyond its recomputed ops, which
    Maya charges as backward ops.

    Measured as (checkpointed step - plain step) per region for two block kinds, Linear+ReLU and a
    small transformer block, less the recomputed ops at `backward_op_us`; a line through the two
    points gives the fixed and per-op shares. The forward's share is the same line through
    (checkpointed forward - plain forward) per region, both with grad enabled: what the region costs
    before backward recomputes it.
    """
    from torch.utils.checkpoint import checkpoint

    points, forward_points = [], []
    for make, shape in (
        (lambda: torch.nn.Sequential(torch.nn.Linear(TINY_FEATURES, TINY_FEATURES), torch.nn.ReLU()), (1, TINY_FEATURES)),
        (_AttentionBlock, (1, 8, TINY_FEATURES)),
    ):
        blocks = [make().to(device) for _ in range(MODULE_DEPTH)]
        inp = torch.randn(*shape, device=device)

        def forward(region: Callable[[torch.nn.Module, torch.Tensor], torch.Tensor]) -> torch.Tensor:
            x = inp.requires_grad_(True)
            for block in blocks:
                x = region(block, x)
            return x

        def plain_region(block: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
            return block(x)

        def checkpointed_region(block: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
            return checkpoint(block, x, use_reentrant=False)

        ops = _count_ops(lambda: blocks[0](inp))
        per_region = 1e6 / (n * len(blocks))
        extra_s = (_time_chain(lambda: forward(checkpointed_region).sum().backward(), n, sync)
                   - _time_chain(lambda: forward(plain_region).sum().backward(), n, sync))
        points.append((ops, extra_s * per_region - ops * backward_op_us))
        forward_s = _time_chain(lambda: forward(checkpointed_region), n, sync) - _time_chain(lambda: forward(plain_region), n, sync)
        forward_points.append((ops, forward_s * per_region))
    fixed, per_op = _line(points)
    forward_fixed, forward_per_op = _line(forward_points)
    return fixed, per_op, forward_fixed, forward_per_op


def _line(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(intercept, slope) of the line through two (x, y) points."""
    (x_a, y_a), (x_b, y_b) = points
    slope = (y_b - y_a) / (x_b - x_a)
    return y_a - slope * x_a, slope


def _layer_extras_us(device: torch.device, n: int, sync: Callable[[], None]) -> dict[str, float]:
    """Host time per call of a CNN's convolution and training-mode batch norm beyond a one-launch
    call, forward and backward (`METHOD`), on the format mixed-precision CNNs run them in."""
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    x = torch.randn(2, TINY_FEATURES, 8, 8, device=device, dtype=dtype).contiguous(memory_format=torch.channels_last)
    weight = torch.randn(TINY_FEATURES, TINY_FEATURES, 3, 3, device=device, dtype=dtype)
    weight = weight.contiguous(memory_format=torch.channels_last)
    gamma, beta = torch.ones(TINY_FEATURES, device=device), torch.zeros(TINY_FEATURES, device=device)
    running_mean, running_var = torch.zeros(TINY_FEATURES, device=device), torch.ones(TINY_FEATURES, device=device)
    linear_in = torch.randn(1, TINY_FEATURES, device=device, dtype=dtype)
    linear_weight = torch.randn(TINY_FEATURES, TINY_FEATURES, device=device, dtype=dtype)
    for t in (x, weight, gamma, beta, linear_in, linear_weight):
        t.requires_grad_(True)

    def fastest_us(step: Callable[[], Any]) -> float:
        return min(_time_chain(step, n, sync) for _ in range(3)) * 1e6 / n

    linear_us = fastest_us(lambda: torch.nn.functional.linear(linear_in, linear_weight))
    # One torch.autograd.grad call has a fixed engine cost that a model's one backward pass pays once:
    # the baseline is a one-op backward (relu's threshold_backward) through the same call.
    relu_grad = torch.ones_like(linear_in)
    relu_us = fastest_us(lambda: torch.relu(linear_in))
    one_op_backward_us = fastest_us(lambda: torch.autograd.grad(torch.relu(linear_in), linear_in, relu_grad)) - relu_us
    calls = {
        "conv": (lambda: torch.nn.functional.conv2d(x, weight, None, 1, 1), (x, weight)),
        "batch_norm": (lambda: torch.nn.functional.batch_norm(x, running_mean, running_var, gamma, beta, True),
                       (x, gamma, beta)),
    }
    out = {}
    for name, (call, inputs) in calls.items():
        grad = torch.ones_like(call())
        forward_us = fastest_us(call)
        both_us = fastest_us(lambda: torch.autograd.grad(call(), inputs, grad))
        out[f"{name}_forward_extra_us"] = max(forward_us - linear_us, 0.0)
        out[f"{name}_backward_extra_us"] = max(both_us - forward_us - one_op_backward_us, 0.0)
    return out


def _count_ops(step: Callable[[], Any]) -> int:
    """Kernel (non-view) aten ops issued by one call of `step`."""
    with _OpCounter() as counter:
        step()
    return counter.kernel_ops


def _time_chain(step: Callable[[], Any], n: int, sync: Callable[[], None]) -> float:
    """Wall seconds for `n` calls of `step` after a short warm-up, device synchronised around them."""
    for _ in range(min(n, 20)):
        step()
    sync()
    start = time.perf_counter()
    for _ in range(n):
        step()
    sync()
    return time.perf_counter() - start
