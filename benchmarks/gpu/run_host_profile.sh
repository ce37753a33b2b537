#!/usr/bin/env bash
# Host-time study of examples/train_gpt.py on one machine of several H200s (issue #8), from the repo root:
#   bash benchmarks/gpu/run_host_profile.sh OUTDIR [GPU_COUNTS...]   (default GPU counts: 2 4)
# For each GPU count N: benchmarks/gpu/host_profile_train_gpt.py under DDP, FSDP2 and TP2 x FSDP2 on
# the first N GPUs (per-phase host issue time, step time, a rank-0 torch.profiler trace). Then the host
# microbenchmarks of maya/estimator/host_overhead.py and framework_overhead.py on the same host, so
# that their figures and the in-situ ones come from one machine. Everything lands in OUTDIR.
set -u
out=${1:?OUTDIR}; shift
counts=${*:-2 4}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
mkdir -p "$out"
{ nvidia-smi --query-gpu=name,driver_version --format=csv; python3 -c "import torch; print(torch.__version__, torch.version.cuda)"; nproc; lscpu | grep -i 'model name'; } > "$out/machine.txt" 2>&1
port=29600
for n in $counts; do
  visible=$(seq -s, 0 $((n - 1)))
  for cfg in "ddp:--dp ddp" "fsdp:--dp fsdp" "tp2_fsdp:--tp 2 --dp fsdp"; do
    name=${cfg%%:*}; flags=${cfg#*:}; port=$((port + 1))
    echo "== $name on $n GPUs"
    CUDA_VISIBLE_DEVICES=$visible timeout 120 python3 -m torch.distributed.run --nproc-per-node "$n" \
      --master-port $port benchmarks/gpu/host_profile_train_gpt.py --out-dir "$out/${name}_$n" $flags \
      > "$out/${name}_$n.log" 2>&1
    echo "rc=$?"; grep '^{' "$out/${name}_$n.log"
  done
done
echo "== microbenchmarks"
CUDA_VISIBLE_DEVICES=0 timeout 150 python3 -m maya.estimator.framework_overhead --out "$out/framework_overhead.json" > "$out/framework_overhead.log" 2>&1
echo "rc=$?"
CUDA_VISIBLE_DEVICES=0 timeout 100 python3 -c "import json; from maya.estimator.host_overhead import measure_host_overhead; json.dump(measure_host_overhead('cuda'), open('$out/host_overhead.json', 'w'), indent=1)" > "$out/host_overhead.log" 2>&1
echo "rc=$?"
