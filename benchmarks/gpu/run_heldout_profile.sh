#!/usr/bin/env bash
# The held-out op set of benchmarks/estimator_accuracy.py, on a machine with a real NVIDIA GPU:
# every family's random draws from seed 1 (the shipped profiles used seed 0), no fixed grid.
# Usage (from the repository root): bash benchmarks/gpu/run_heldout_profile.sh OUT_DIR [FAMILIES]
set -euo pipefail
out=${1:?usage: run_heldout_profile.sh OUT_DIR [FAMILIES]}
families=${2:-gemm,conv,sdpa,norm,softmax,embedding,elementwise,reduction,copy,foreach,index,rnn}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
mkdir -p "$out"
command="python3 -m maya.estimator.profiler --out OUT --random-only --seed 1 --families $families"
echo "$command" > "$out/command.txt"
python3 -m maya.estimator.profiler --out "$out" --random-only --seed 1 --families "$families" 2>&1 \
  | grep -v "^DEBUG" | tee "$out/profile.log" | tail -n 20
