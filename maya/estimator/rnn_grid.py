"""The profile grid of cuDNN's fused RNNs (family "rnn"): `_cudnn_rnn` and `_cudnn_rnn_backward`.

Each `RnnShape` is one nn.LSTM / nn.GRU / nn.RNN call, encoded as the emulator records it
(maya/emulator/rnn.py): the input, every weight in `_flat_weights` order, the flat weight buffer,
hx (and cx for LSTM); the backward adds the forward's output, grad_output and the training reserve,
with no gradient for h_n / c_n (a language model's case). The replay rebuilds the weight buffer with
`_cudnn_rnn_flatten_weight` and runs the forward first to get the reserve (maya/estimator/replay.py).

Shapes span real training (1-4 layers, hidden 128-4096, batch 1-256, 16-1024 steps, one or two
directions, fp32/bf16/fp16), capped by `MAX_FORWARD_FLOPS` and `MAX_BYTES` so that the family times
in a few minutes on an H200. Only torch, the standard library and torch-only Maya modules are imported.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from maya.emulator.rnn_kernels import GATES, RnnMode, reserve_size_bytes
from maya.estimator.replay import TensorSpec

FORWARD_OP = "aten::_cudnn_rnn"
BACKWARD_OP = "aten::_cudnn_rnn_backward"

MAX_FORWARD_FLOPS = 1e12
"""Largest forward timed: about 20 ms in float32 on an H200 (its backward about twice that)."""

MAX_BYTES = 8 << 30
"""Largest device footprint of one case: activations, reserve, weights and their gradients."""

MAX_SEQUENTIAL_STEPS = 4096
"""Largest steps * layers * directions: cells run one after another, a few microseconds each."""

RANDOM_DRAWS = 80
"""Random shapes drawn besides the fixed grid (each gives a forward and a backward case)."""

DTYPES = ("float32", "bfloat16", "float16")
HIDDEN_SIZES = (128, 512, 1024, 2048, 4096)
BATCH_AND_STEPS = ((1, 128), (16, 256), (64, 128), (256, 32))
"""(batch, time steps) of the fixed grid: online, sequence-model and language-model batches."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RnnShape:
    """One RNN module call."""

    mode: RnnMode
    """Cell type."""
    input_size: int
    """Features per input token."""
    hidden_size: int
    """Features of the hidden state."""
    num_layers: int
    """Stacked layers."""
    batch: int
    """Sequences per call."""
    steps: int
    """Time steps per sequence."""
    bidirectional: bool
    """Two directions per layer."""
    dtype: str
    """dtype name of the input, weights and states."""

    @property
    def directions(self) -> int:
        return 2 if self.bidirectional else 1

    def weight_shapes(self) -> list[tuple[int, ...]]:
        """w_ih, w_hh, b_ih, b_hh of each layer and direction (`_flat_weights` order)."""
        rows = GATES[self.mode] * self.hidden_size
        shapes = []
        for layer in range(self.num_layers):
            layer_input = self.input_size if layer == 0 else self.directions * self.hidden_size
            for _ in range(self.directions):
                shapes += [(rows, layer_input), (rows, self.hidden_size), (rows,), (rows,)]
        return shapes

    def forward_flops(self) -> float:
        """2 * tokens * weight-matrix elements, as `maya.emulator.op_cost` counts it."""
        matrices = sum(math.prod(s) for s in self.weight_shapes() if len(s) == 2)
        return 2.0 * self.batch * self.steps * matrices

    def footprint_bytes(self) -> int:
        """Upper bound of what one backward case holds: activations, reserve, weights, gradients."""
        itemsize = 4 if self.dtype == "float32" else 2
        tokens = self.batch * self.steps
        width = max(self.input_size, self.directions * self.hidden_size)
        activations = 4 * tokens * width  # input, output, grad_output, grad_input
        reserve = self.num_layers * self.directions * tokens * (GATES[self.mode] + 2) * self.hidden_size
        weights = 3 * sum(math.prod(s) for s in self.weight_shapes())  # weights, flat buffer, gradient
        return itemsize * (activations + reserve + weights)


def calls(shape: RnnShape) -> Iterator[tuple[str, list[Any]]]:
    """(op, args) of the forward and the backward of one shape, tensors as `TensorSpec`."""
    dtype = shape.dtype
    layers_dirs = shape.num_layers * shape.directions
    weights = [TensorSpec(shape=s, dtype=dtype) for s in shape.weight_shapes()]
    weight_buf = TensorSpec(shape=(sum(math.prod(s) for s in shape.weight_shapes()),), dtype=dtype)
    x = TensorSpec(shape=(shape.steps, shape.batch, shape.input_size), dtype=dtype)
    hx = TensorSpec(shape=(layers_dirs, shape.batch, shape.hidden_size), dtype=dtype)
    cx = hx if shape.mode is RnnMode.LSTM else None
    out = TensorSpec(shape=(shape.steps, shape.batch, shape.directions * shape.hidden_size), dtype=dtype)
    # (mode, hidden_size, proj_size, num_layers, batch_first, dropout, train, bidirectional, batch_sizes, dropout_state)
    config = [int(shape.mode), shape.hidden_size, 0, shape.num_layers, False, 0.0, True, shape.bidirectional, [], None]
    yield FORWARD_OP, [x, weights, 4, weight_buf, hx, cx, *config]
    # The size the emulator records; the replay passes the reserve the forward really returns.
    reserve_bytes = reserve_size_bytes(
        shape.mode, tokens=shape.batch * shape.steps, batch=shape.batch,
        hidden_size=shape.hidden_size, proj_size=0, num_layers=shape.num_layers,
        bidirectional=shape.bidirectional, itemsize_bytes=4 if dtype == "float32" else 2,
    )  # fmt: skip
    reserve = TensorSpec(shape=(reserve_bytes,), dtype="uint8")
    yield BACKWARD_OP, [x, weights, 4, weight_buf, hx, cx, out, out, None, None, *config, reserve,
                        [True, False, False, True]]  # fmt: skip


def fits(shape: RnnShape) -> bool:
    """Within the grid's time and memory caps."""
    sequential = shape.steps * shape.num_layers * shape.directions
    return (
        shape.forward_flops() <= MAX_FORWARD_FLOPS
        and shape.footprint_bytes() <= MAX_BYTES
        and sequential <= MAX_SEQUENTIAL_STEPS
    )


def fixed_shapes(quick: bool) -> Iterator[RnnShape]:
    """The fixed grid: every mode but ReLU (timed like tanh), dtype, hidden size, batch and depth."""
    if quick:
        yield RnnShape(mode=RnnMode.LSTM, input_size=8, hidden_size=16, num_layers=2, batch=3, steps=5,
                       bidirectional=False, dtype="float32")  # fmt: skip
        yield RnnShape(mode=RnnMode.GRU, input_size=8, hidden_size=16, num_layers=1, batch=2, steps=4,
                       bidirectional=True, dtype="float32")  # fmt: skip
        return
    for dtype in DTYPES:
        for mode in (RnnMode.LSTM, RnnMode.GRU, RnnMode.RNN_TANH):
            for hidden in HIDDEN_SIZES:
                for batch, steps in BATCH_AND_STEPS:
                    for layers in (1, 2):
                        shape = RnnShape(mode=mode, input_size=hidden, hidden_size=hidden, num_layers=layers,
                                         batch=batch, steps=steps, bidirectional=False, dtype=dtype)  # fmt: skip
                        if fits(shape):
                            yield shape


def random_shapes(rng: random.Random) -> Iterator[RnnShape]:
    """`RANDOM_DRAWS` shapes off the fixed grid: 1-4 layers, bidirectional, ReLU, up to 1024 steps."""
    drawn = 0
    while drawn < RANDOM_DRAWS:
        hidden = _log_uniform(rng, 128, 4096, 64)
        shape = RnnShape(
            mode=rng.choice(list(RnnMode)),
            input_size=rng.choice((hidden, _log_uniform(rng, 32, 4096, 32))),
            hidden_size=hidden,
            num_layers=rng.randint(1, 4),
            batch=_log_uniform(rng, 1, 256),
            steps=_log_uniform(rng, 16, 1024),
            bidirectional=rng.random() < 0.4,
            dtype=rng.choice(DTYPES),
        )
        if fits(shape):
            drawn += 1
            yield shape


def _log_uniform(rng: random.Random, lo: int, hi: int, multiple: int = 1) -> int:
    value = math.exp(rng.uniform(math.log(lo), math.log(hi)))
    return max(multiple, round(value / multiple) * multiple)
