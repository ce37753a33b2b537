"""Depth extrapolation error: step time and peak memory extrapolated from two shallow copies of a model
against an emulation of the full depth.

For each case (examples/train_gpt.py on one GPU, or a world under DDP, FSDP2, tensor parallelism or
a pipeline schedule), emulates the two depths the tuner would (maya.tune.depth_extrapolation: the
depth unit is pp blocks, 2 * pp with the interleaved schedule) and the full depth, all at the same
micro-batch count, and reports the relative error of the extrapolated figures. Every emulation runs
on a local Ray.

    python benchmarks/depth_extrapolation.py --json benchmarks/results/depth_extrapolation.json
    python benchmarks/depth_extrapolation.py --layers 32 --multiples 2,3 --case pp2-1f1b
"""

import argparse
import subprocess
from pathlib import Path

from accum_extrapolation import figures, with_errors, write_result  # benchmarks/ is on sys.path when a script of it runs

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "train_gpt.py"
# A laptop-scale GPT (width 256, 512-token sequences) in bf16, one optimizer step; --layers is set per run.
MODEL = ["--steps", "1", "--seq", "512", "--dim", "256", "--heads", "4", "--vocab", "8192", "--batch", "2",
         "--precision", "bf16"]
# case: (world size, depth unit, flags)
CASES = {
    "single": (1, 1, ["--accum", "2"]),
    "ddp2": (2, 1, ["--dp", "ddp", "--accum", "2"]),
    "fsdp2-ckpt": (2, 1, ["--dp", "fsdp", "--accum", "2", "--checkpoint", "nonreentrant"]),
    "tp2-fsdp2": (4, 1, ["--dp", "fsdp", "--tp", "2", "--accum", "2"]),
    "pp2-1f1b": (2, 2, ["--pp", "2", "--pp-schedule", "1f1b", "--accum", "4"]),
    "pp2-interleaved": (2, 4, ["--pp", "2", "--pp-schedule", "interleaved", "--accum", "4"]),
    "pp4-1f1b-fsdp": (8, 4, ["--pp", "4", "--pp-schedule", "1f1b", "--dp", "fsdp", "--accum", "4"]),
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=24, help="the full depth to predict (a multiple of every depth unit)")
    p.add_argument("--multiples", default="1,2", help="the two emulated depths as multiples of the depth unit")
    p.add_argument("--case", action="append", choices=sorted(CASES), help="cases to run (default: all)")
    p.add_argument("--gpu", default="h100")
    p.add_argument("--json", metavar="PATH", help="write the errors here")
    args = p.parse_args()

    import ray

    from maya.tune.accum_extrapolation import extrapolate_figures

    multiples = tuple(int(m) for m in args.multiples.split(","))
    ray.init(include_dashboard=False, log_to_driver=False)
    rows = []
    for name in args.case or list(CASES):
        world_size, unit, extra = CASES[name]
        argv = [*MODEL, *extra]
        depths = tuple(m * unit for m in multiples)
        small = {d: figures(world_size, [*argv, "--layers", str(d)], args.gpu) for d in depths}
        full = figures(world_size, [*argv, "--layers", str(args.layers)], args.gpu)
        derived = extrapolate_figures(small, args.layers, axis="depth")
        rows.append(with_errors({
            "case": name, "world_size": world_size, "argv": " ".join(extra), "layers": args.layers, "depths": list(depths),
            "emulate_s": {str(d): f["emulate_s"] for d, f in {**small, args.layers: full}.items()}}, full, derived))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    command = "python benchmarks/depth_extrapolation.py " + " ".join(
        [f"--layers {args.layers}", f"--multiples {args.multiples}", *(f"--case {c}" for c in args.case or [])])
    write_result(command, rows, args.json, model=" ".join(MODEL), gpu=args.gpu, commit=commit)


if __name__ == "__main__":
    main()
