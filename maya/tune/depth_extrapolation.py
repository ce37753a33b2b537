"""Depth extrapolation: predict a deep model from emulations of two shallow copies of it.

A Llama-70B-class model is 80 identical blocks; the emulator records every op of every block
(about 0.75 ms of CPU per trace row when warm), so emulating the full depth costs minutes per
configuration, while what the tuner needs grows affinely with the number of blocks:

    figure(L) = figure(L2) + (L - L2) * (figure(L2) - figure(L1)) / (L2 - L1)

for the step time (each block adds its forward, backward, recomputation, FSDP gathers and
reductions, and its share of the optimizer step; with a pipeline, each stage's blocks and so the
schedule's bubbles scale together), for every memory segment (parameters, gradients, optimizer state
and saved activations are per block; embeddings and the output layer are in both counts and cancel
out of the slope) and for the time breakdown.

The depths emulated are multiples of the configuration's *depth unit*, the smallest depth it runs
with (pp blocks: one per pipeline stage; 2 * pp with two virtual stages per rank), so both small
models split over the same stages: L1 = m1 * unit, L2 = m2 * unit with (m1, m2) from DEPTH_MULTIPLES.
With micro-batch extrapolation as well (maya.tune.accum_extrapolation), the four corners
(L1, a1), (L1, a2), (L2, a1), (L2, a2) are emulated; figures are extrapolated along micro-batches at
each depth, then along depth (`maya.tune.accum_extrapolation.extrapolate_figures` composes).

This is an approximation: a block's cost must not depend on how many blocks there are (true of a
transformer stack; not of a model whose width changes with depth). benchmarks/depth_extrapolation.py
measures its error against emulations of the full depth and tests/tune/test_depth_extrapolation.py
bounds it on a small GPT. The timeline and top ops a configuration reports are those of the larger
emulated depth.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from maya.tune.study import Study

DEPTH_MULTIPLES: tuple[tuple[int, int], ...] = ((3, 4),)
"""The emulated depths as multiples of the depth unit, in order of preference: the first pair whose
sum is below the full depth; with none, the full depth is emulated.

Each memory part is a maximum over the iteration, and the extrapolation is right only when its peak
sits at the same kind of place at both depths. benchmarks/depth_peak_steady.py (results in
benchmarks/results/depth_peak_steady.json), on the Llama-70B-class study's tp 1 FSDP configuration
of micro-batch 2 over 256 H100s: with 1 and 2 blocks the peak is the loss's backward (the logits'
gradient), from 3 blocks on the backward of the second-to-last block, a step of 1.2 GiB between 2
and 3 blocks; extrapolated from (2, 3) the 80-block peak came out 106 GiB, over the H100, where the
80-block emulation needs 25.2 GiB; from (3, 4) 0.1% high (from (1, 2) 4.4% low). The pairs (2, 3) and (1, 2) were used
before (benchmarks/depth_extrapolation.py on a small GPT, 24 blocks: (1, 2) put the allocated peak
1.4-2.2% high, (2, 3) within 0.4%, (3, 4) within 1.6%: benchmarks/results/depth_extrapolation_34.json),
and (1, 2) served deep pipelines; now a configuration whose unit
is too large for (3, 4) (80 blocks over 16 stages) emulates all of its blocks."""


def depth_unit(study: Study, config: Mapping[str, Any]) -> int:
    """The smallest depth `config` (resolved: with pp) runs with: `study.depth_unit(config)`, else its pp.

    Raises:
        ValueError: the study's `depth_unit` returned something other than an integer >= 1.
    """
    unit = study.depth_unit(config) if study.depth_unit is not None else int(config.get("pp", 1))
    if isinstance(unit, bool) or not isinstance(unit, int) or unit < 1:
        raise ValueError(f"depth_unit({dict(config)}) returned {unit!r}; it must return an integer >= 1")
    return unit


def depth_counts(study: Study, config: Mapping[str, Any]) -> tuple[int, int] | None:
    """The two depths to emulate for a resolved configuration, or None to emulate the full depth.

    None when the study has no `depth_flag`, or when L1 + L2 is not below the full depth for any
    pair of DEPTH_MULTIPLES (two small emulations would cost as much as the full one).
    """
    full = study.full_depth
    if full is None:
        return None
    unit = depth_unit(study, config)
    for m1, m2 in DEPTH_MULTIPLES:
        if (m1 + m2) * unit < full:
            return m1 * unit, m2 * unit
    return None


def with_depth(script_args: tuple[str, ...], flag: str, depth: int) -> tuple[str, ...]:
    """`script_args` with the value after `flag` replaced by `depth`."""
    args = list(script_args)
    args[args.index(flag) + 1] = str(depth)
    return tuple(args)
