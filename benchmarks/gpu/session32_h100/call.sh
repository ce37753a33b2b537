#!/usr/bin/env bash
# Session 32 device calls on one NVIDIA H100 (kind nvidia-h100-x1): the validation suite's ground truth on
# an H100, to score Maya's H100 predictions (the H200 models transferred through the catalog's ratios), and
# that lease's host figures. From the repository root:
#   bash benchmarks/gpu/session32_h100/call.sh $OUT 1   # host profile, then the suite's first 15 workloads
#   bash benchmarks/gpu/session32_h100/call.sh $OUT 2   # the other 15
set -u
part=${2:?PART (1 or 2)}
DIR=${1:?OUT}/s32_h100_$part
. benchmarks/gpu/device_call_start.sh
names=$(python3 -c "
import sys; sys.path.insert(0, 'benchmarks/validation')
from suite import WORKLOADS
names = [w.name for w in WORKLOADS]
print(' '.join(names[:15] if '$part' == '1' else names[15:]))")
if [ "$part" = 1 ]; then
  timeout 120 python3 -m maya.estimator.profiler --families host --out "$DIR/host" > "$DIR/host.log" 2>&1
  echo "host profile rc=$?"
fi
timeout 520 python3 benchmarks/validation/measure_ground_truth.py --only $names --out "$DIR/ground_truth.json" \
  2>&1 | tee "$DIR/ground_truth.log"
date -u +%FT%TZ >> "$DIR/env.txt"
cat "$DIR/env.txt"
