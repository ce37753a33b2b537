#!/usr/bin/env bash
# The rest of the RNN profiles timed behind a GPU sleep (benchmarks/gpu/rnn_sleep_h200/COMMANDS.md),
# plus the host microbenchmarks with the RNN per-step launch figures, in one call on one GPU, from the
# repository root (about 8 minutes):
#
#   bash benchmarks/gpu/run_rnn_sleep_rest.sh OUT
#
# OUT/host/host_overhead.json: `maya profile --families host` (rnn_cell_forward_us, rnn_cell_backward_us
#   and the other figures of that machine);
# OUT/grid_no-tf32/rnn.parquet: the float32 RNN grid with TF32 off;
# OUT/draws/rnn_seed23 .. 25 (TF32 on) and rnn_seed26_no-tf32 .. 35_no-tf32.
#
# Then, without a GPU, to ship them in place of the idle-GPU (launch-bound) RNN profiles (done 2026-12-02,
# session 14: benchmarks/gpu/rnn_sleep_h200/COMMANDS.md):
#   python benchmarks/gpu/combine_draws.py maya/estimator/data/h200/rnn.parquet \
#       benchmarks/gpu/rnn_sleep_h200/rnn_sleep.parquet OUT/grid_no-tf32/rnn.parquet
#   python benchmarks/gpu/combine_draws.py maya/estimator/data/h200/rnn_draws.parquet OUT/draws/rnn_seed*/rnn.parquet
#   add rnn_cell_forward_us / rnn_cell_backward_us to maya/estimator/data/h200/host_overhead.json (scaled to
#   that file's machine like its other borrowed figures: see its "notes"), then refit, recalibrate, validate
#   (maya fit ...; python benchmarks/calibrate.py --write; python benchmarks/validate.py ...) and score the
#   held-out RNN rows against benchmarks/gpu/rnn_heldout_sleep_h200 (--median-out of rnn_repeat_probe.py).
set -u
OUT=${1:?usage: run_rnn_sleep_rest.sh OUT}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONPATH=$PWD PYTHONUNBUFFERED=1
mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u;
  python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())"; } > "$OUT/env.txt" 2>&1
timeout 150 python3 -m maya.estimator.profiler --out "$OUT/host" --families host > "$OUT/host.log" 2>&1
echo "host: exit $? at ${SECONDS} s"
timeout 120 python3 -m maya.estimator.profiler --out "$OUT/grid_no-tf32" --families rnn --no-tf32 --dtypes float32 \
  > "$OUT/grid_no-tf32.log" 2>&1
echo "grid_no-tf32: exit $? at ${SECONDS} s"
jobs=(rnn:23 rnn:24 rnn:25)
for seed in $(seq 26 35); do jobs+=("rnn:$seed:no-tf32"); done
bash benchmarks/gpu/run_random_draws.sh "$OUT/draws" 0 $((540 - SECONDS)) "${jobs[@]}"
