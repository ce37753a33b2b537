"""The host figures of shapes a process runs for the first time, from sessions 34 and 35's H200 probes.

    python benchmarks/new_shape_figures.py [--write]

Reads `benchmarks/gpu/session34/s34/new_shape_host.json` (`new_shape_host_probe.py`: host microseconds
per call of an op on a shape the process has not run before, less the same op on a shape it has) and
the MoE probe's expert sizes (`s34/` and `s34c/moe_fixed_shapes.json`, `moe_fixed_shapes_probe.py`),
and prints:

- `new_shape_us`: per figure of `maya.emulator.shape_caches` (the `new_shape` trace mark), the extra
  host time of a new shape: "gemm" the median over the bfloat16 GEMMs whose M changed (F.linear,
  F.linear with bias, mm), "gemm_k" the bfloat16 GEMM whose reduction size changed (a weight
  gradient), "gemm_float32" the median over the four float32 GEMMs, "conv" and "conv_float32" a
  channels-last 3x3 convolution forward, "cudnn_attention" a causal cuDNN attention forward (a new
  sequence length); "conv_backward" and "cudnn_attention_backward" the same bfloat16 convolution and
  attention run forward and backward (`session35/s35/new_shape_host_backward.json`, `--backward`)
  less those forward figures: cuDNN's plans for the backward (another lease than the forward's).
  A float32 convolution's backward was not measured and gets no figure. Not scaled to the shipped
  `aten_op_us` (the probes' leases read 9.47 and 6.87 us before their chains, 7.12 and 10.08 after;
  the shipped figure is 9.38).
- `data_dependent_new_share`: the share of a step's data-dependent sizes that the process had not met
  in an earlier step or earlier in that step, over the measured steps of the MoE workload's
  data-dependent runs (its untrained router gave each expert 16-5,878 of the 2,048 tokens it gets on
  average): a GEMM marked both `new_shape` and `data_dependent_shape` is charged this share of its
  figure, since the emulator gives every expert its average and cannot know which sizes recur.

`--write` stores both in maya/estimator/data/h200/host_overhead.json, with the method.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SESSION = ROOT / "benchmarks" / "gpu" / "session34"
BACKWARD_PROBE = ROOT / "benchmarks" / "gpu" / "session35" / "s35" / "new_shape_host_backward.json"
HOST_FILE = ROOT / "maya" / "estimator" / "data" / "h200" / "host_overhead.json"
sys.path.insert(0, str(ROOT / "benchmarks"))
from moe_shape_transient import new_sizes_per_step  # noqa: E402

WARMUP = 4
"""The MoE workload's unmeasured steps (its default `--warmup`)."""


def new_shape_us(probe: dict, backward_probe: dict) -> dict[str, float]:
    half, single, both = probe["bfloat16"], probe["float32"], backward_probe["bfloat16"]
    extra = lambda rows, case: rows[case]["new_minus_repeat_us"]  # noqa: E731
    return {
        "gemm": round(statistics.median(extra(half, c) for c in ("linear_m", "addmm_m", "mm_m")), 1),
        "gemm_k": round(extra(half, "mm_k"), 1),
        "gemm_float32": round(statistics.median(extra(single, c) for c in ("linear_m", "addmm_m", "mm_m", "mm_k")), 1),
        "conv": round(extra(half, "conv_h"), 1),
        "conv_float32": round(extra(single, "conv_h"), 1),
        "cudnn_attention": round(extra(half, "sdpa_s"), 1),
        "conv_backward": round(extra(both, "conv_h_fwd_bwd") - extra(half, "conv_h"), 1),
        "cudnn_attention_backward": round(extra(both, "sdpa_s_fwd_bwd") - extra(half, "sdpa_s"), 1),
    }


def new_share(runs: list[dict]) -> float:
    """Mean over the measured steps of the data-dependent runs of (new sizes / sizes) per step."""
    shares = []
    for run in runs:
        sizes = run.get("expert_sizes")
        if not sizes:
            continue
        steps = WARMUP + len(run["step_ms"])
        per_step = len(sizes) // steps
        fresh = new_sizes_per_step(sizes, per_step)
        shares.extend(n / per_step for n in fresh[WARMUP:])
    return round(statistics.mean(shares), 3)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--write", action="store_true", help="store the figures in host_overhead.json")
    args = p.parse_args(argv)
    probe = json.loads((SESSION / "s34" / "new_shape_host.json").read_text())
    backward_probe = json.loads(BACKWARD_PROBE.read_text())
    runs = [r for d in ("s34", "s34c") for r in json.loads((SESSION / d / "moe_fixed_shapes.json").read_text())["runs"]]
    figures, share = new_shape_us(probe, backward_probe), new_share(runs)
    print(f"new_shape_us {json.dumps(figures)}")
    print(f"data_dependent_new_share {share}")
    if args.write:
        host = json.loads(HOST_FILE.read_text())
        host["new_shape_us"] = figures
        host["data_dependent_new_share"] = share
        host["new_shape_method"] = (
            "`python benchmarks/new_shape_figures.py --write` from benchmarks/gpu/session34 (one H200 lease, "
            f"{probe['date']}, torch {probe['torch_version']}) and session35/s35 (another, {backward_probe['date']}): "
            "new_shape_us = host time of an op on a shape the "
            "process had not run before less the same op on a shape it had (new_shape_host_probe.py, chains of "
            "100 calls, median of 5; a revisited shape cost what a repeated one did): cuBLAS's kernel lookup "
            "(gemm: bfloat16 with a new M, the median of F.linear, F.linear with bias and mm; gemm_k: a new "
            "reduction size; gemm_float32: the median of four float32 GEMMs) and cuDNN's plan (conv, "
            "conv_float32: a channels-last 3x3 convolution forward; cudnn_attention: a causal attention forward "
            "with a new sequence length; conv_backward, cudnn_attention_backward: the same bfloat16 convolution and "
            "attention forward and backward, less the forward figure, median of 2, session 35's lease); a float32 "
            "convolution's backward not measured. Not scaled (the leases' aten_op_us 9.47 and 6.87 us before "
            "the chains, 7.12 and 10.08 after). data_dependent_new_share = the mean "
            "over measured steps of the share of each step's expert sizes new to the process, in the MoE "
            "validation workload's data-dependent runs of moe_fixed_shapes_probe.py (s34, s34c; 60 steps each): "
            "a GEMM marked both new_shape and data_dependent_shape pays that share of its figure.")
        HOST_FILE.write_text(json.dumps(host, indent=2) + "\n")
        print(f"wrote new_shape_us and data_dependent_new_share to {HOST_FILE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
