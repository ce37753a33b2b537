#!/usr/bin/env bash
# Time again, in one fresh process, every convolution row of the shipped H200 profiles that took
# over 10 ms (the slow cuDNN choices that dominate the convolution model's time-weighted error), to
# tell a repeatable slow algorithm from a one-off timing:
#
#   bash benchmarks/gpu/run_conv_cliff_repeat.sh OUT
#
# then, without a GPU: python benchmarks/gpu/rnn_repeat_probe.py --summarize OUT/<file> for each
# profile file's rows (process1.json there holds the new timing and the recorded one per row).
set -u
OUT=${1:?usage: run_conv_cliff_repeat.sh OUT}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONPATH=$PWD
mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u;
  python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())"; } > "$OUT/env.txt" 2>&1
for name in conv conv_draws conv_draws_2; do
  profile=maya/estimator/data/h200/$name.parquet
  rows=$(python3 -c "import pandas as pd; d = pd.read_parquet('$profile', columns=['family', 'duration_us']); print(','.join(str(i) for i in d.index[(d.family == 'conv') & (d.duration_us > 1e4)]))")
  mkdir -p "$OUT/$name"
  timeout 150 python3 benchmarks/gpu/rnn_repeat_probe.py --profile "$profile" --rows "$rows" --rounds 1 \
    --out "$OUT/$name/process1.json" > "$OUT/$name/process1.log" 2>&1
  echo "$name: exit $?"
done
