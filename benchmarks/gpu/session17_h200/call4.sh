#!/usr/bin/env bash
# Session 17, device call 4 (1 x H200), from the repository root: bash benchmarks/gpu/session17_h200/call4.sh OUT
# The copy grid with cat and stack of attention-shaped tensors (commit below in COMMANDS.md).
set -u
out=${1:?usage: call4.sh OUT}; o=/tmp/s17d
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONPATH=$PWD PYTHONUNBUFFERED=1
mkdir -p $o
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())"; } > $o/env.txt
timeout 100 python3 -m maya.estimator.profiler --out $o/grid --families copy > $o/grid.log 2>&1
echo "grid rc=$? at $SECONDS s" >> $o/jobs.txt
date -u +%FT%TZ >> $o/env.txt
tar czf "$out/s17d.tgz" -C /tmp s17d
