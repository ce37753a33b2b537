#!/usr/bin/env bash
# Times the convolution family (maya/estimator/profile_grid.py) with torch.backends.cudnn.benchmark on,
# as scripts that set it (CNN training usually does) run their convolutions, on a machine with an NVIDIA
# GPU, from the repository root:   bash benchmarks/gpu/run_conv_benchmark_profile.sh OUT_DIR [SECONDS]
# First seed 1's random draws (the held-out set of benchmarks/estimator_accuracy.py, never trained on),
# then the fixed grid with seed 0's draws, then seeds 2-5's draws, as run_profile.sh times every family;
# each step gets what is left of SECONDS (default 540). Autotuning is slow: on an H200 seed 1's 888
# signatures took 335 s (benchmarks/gpu/heldout_ops_h200_cudnn_benchmark/profile.log), the grid's 838
# forwards 72 s and its 838 backwards 408 s (benchmarks/gpu/conv_cudnn_benchmark_h200/): give the whole
# set (5,202 signatures) that much more time, or run it in parts or shards. Writes
#   OUT_DIR/heldout/conv.parquet         -> benchmarks/gpu/heldout_ops_h200_cudnn_benchmark/
#   OUT_DIR/conv_cudnn_benchmark.parquet -> maya/estimator/data/h200/ (beside conv.parquet, heuristic mode)
# and the logs. SHARD=I/N (default 0/1) times every N-th signature of each step from the I-th, to split
# the work over GPUs (one run per GPU with CUDA_VISIBLE_DEVICES=I); SKIP_HELDOUT=1 skips the first step.
# Then refit and recalibrate:
#   maya fit --profiles maya/estimator/data/h200 --out maya/estimator/data/h200/models --no-exact-table
#   python benchmarks/calibrate.py --write
set -euo pipefail
out=${1:?usage: run_conv_benchmark_profile.sh OUT_DIR [SECONDS]}
budget=${2:-540}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
mkdir -p "$out"
start=$SECONDS
step() {  # step NAME ARGS...: one profiler run into $out/NAME, unless the budget is spent
  local name=$1; shift
  local left=$(( budget - (SECONDS - start) ))
  if (( left <= 0 )); then echo "skipped $name: ${budget} s budget spent"; return; fi
  # The profiler writes its rows at the end: a step cut off by the budget leaves none.
  timeout "$left" python3 -m maya.estimator.profiler --out "$out/$name" --families conv --cudnn-benchmark \
    --shard "${SHARD:-0/1}" "$@" \
    > "$out/$name.log" 2>&1 || echo "$name: stopped (exit $?)"
  echo "$name: $(tail -n 1 "$out/$name.log")"
}
if [[ "${SKIP_HELDOUT:-0}" != 1 ]]; then step heldout --random-only --seed 1; fi
step grid
for seed in 2 3 4 5; do step "draws_seed$seed" --random-only --seed "$seed"; done
python3 - "$out" <<'PY'
import pathlib, sys
import pyarrow as pa, pyarrow.parquet as pq
out = pathlib.Path(sys.argv[1])
parts = [p for p in [out / "grid" / "conv.parquet", *sorted(out.glob("draws_seed*/conv.parquet"))] if p.exists()]
if parts:
    merged = pa.concat_tables([pq.read_table(p) for p in parts])
    pq.write_table(merged, out / "conv_cudnn_benchmark.parquet")
    print(f"conv_cudnn_benchmark.parquet: {merged.num_rows} rows from {[p.parent.name for p in parts]}")
PY
