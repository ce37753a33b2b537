#!/usr/bin/env bash
# Time the held-out RNN rows (benchmarks/gpu/heldout_ops_h200/rnn.parquet) in several fresh processes
# on one GPU, so that they can be scored against their median instead of one timing each:
#
#   bash benchmarks/gpu/run_rnn_heldout_repeat.sh OUT [PROCESSES] [SECONDS_PER_PROCESS]
#
# then, without a GPU:
#   python benchmarks/gpu/rnn_repeat_probe.py --summarize OUT --profile benchmarks/gpu/heldout_ops_h200/rnn.parquet \
#       --median-out DIR/rnn.parquet
#   python benchmarks/estimator_accuracy.py --heldout DIR --repeat /nonexistent --autotuned /nonexistent
#
# Defaults: 3 processes of at most 170 s each. Each process file is rewritten after every row, so
# one stopped by its time limit keeps what it timed.
set -u
OUT=${1:?usage: run_rnn_heldout_repeat.sh OUT [PROCESSES] [SECONDS_PER_PROCESS]}
PROCESSES=${2:-3}
SECONDS_EACH=${3:-170}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONPATH=$PWD
mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u;
  python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())"; } > "$OUT/env.txt" 2>&1
for k in $(seq 1 "$PROCESSES"); do
  timeout "$SECONDS_EACH" python3 benchmarks/gpu/rnn_repeat_probe.py --profile benchmarks/gpu/heldout_ops_h200/rnn.parquet \
    --rows all --rounds 1 --out "$OUT/process$k.json" > "$OUT/process$k.log" 2>&1
  echo "process $k: exit $?"
done
