#!/usr/bin/env bash
# Session 33 device calls on one GPU (an H200, or an H100 when no H200 is lent): the caching allocator's answers to fixed allocation sequences
# under four PYTORCH_CUDA_ALLOC_CONF settings, and the validation suite's ground truth with
# expandable_segments:True. From the repository root:
#   bash benchmarks/gpu/session33/call.sh $OUT 1   # allocator replay, then the suite's first 15 workloads
#   bash benchmarks/gpu/session33/call.sh $OUT 2   # the other 15
set -u
part=${2:?PART (1 or 2)}
DIR=${1:?OUT}/s33_$part
. benchmarks/gpu/device_call_start.sh
names=$(python3 -c "
import sys; sys.path.insert(0, 'benchmarks/validation')
from suite import WORKLOADS
names = [w.name for w in WORKLOADS]
print(' '.join(names[:15] if '$part' == '1' else names[15:]))")
if [ "$part" = 1 ]; then
  timeout 150 python3 benchmarks/gpu/allocator_replay.py --out "$DIR" > "$DIR/allocator_replay.log" 2>&1
  echo "allocator replay rc=$?"; cat "$DIR/allocator_replay.log"
fi
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True timeout 420 python3 benchmarks/validation/measure_ground_truth.py \
  --only $names --out "$DIR/ground_truth_expandable.json" 2>&1 | tee "$DIR/ground_truth_expandable.log"
if [ "$part" = 2 ]; then
  timeout 150 python3 benchmarks/gpu/memory_history_probe.py --out "$DIR/memory_history" \
    --only resnet50_fp32 vit_base_bf16 llama_3b_bf16_ckpt 2>&1 | tee "$DIR/memory_history.log"
fi
date -u +%FT%TZ >> "$DIR/env.txt"
cat "$DIR/env.txt"
