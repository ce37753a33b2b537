#!/usr/bin/env bash
# Session 38: measure_ground_truth.py over a slice of the validation suite, on the device, from the
# repository root; writes /tmp/<TAG>/ (env.txt, machine.txt, names.txt, ground_truth.json and .log)
# and returns it as $OUT/<TAG>.tgz; with HOST=1, the host microbenchmarks first (DIR/host/, as
# `maya profile --families host`). SLICE is a Python slice of suite.WORKLOADS:
#   bash benchmarks/gpu/session38/measure.sh $OUT s38new '[30:]'   # the seven workloads added this session
#   bash benchmarks/gpu/session38/measure.sh $OUT s38gt1 '[:20]'    # then '[20:30]': the thirty before them
set -u
OUTDIR=${1:?OUT}
TAG=${2:?TAG}
SLICE=${3:?SLICE}
LIMIT=${4:-570}
DIR=/tmp/$TAG
. benchmarks/gpu/device_call_start.sh
{ lscpu | grep -E '^(Model name|CPU\(s\)|CPU max MHz)'; nproc; } > "$DIR/machine.txt" 2>&1
if [ "${HOST:-0}" = 1 ]; then
  timeout 60 python3 -m maya.estimator.profiler --out "$DIR/host" --families host > "$DIR/host.log" 2>&1; echo "host rc=$?"
fi
python3 -c "import sys; sys.path.insert(0, 'benchmarks/validation'); import suite; print(' '.join(w.name for w in suite.WORKLOADS$SLICE))" > "$DIR/names.txt"
timeout "$LIMIT" python3 benchmarks/validation/measure_ground_truth.py --out "$DIR/ground_truth.json" --only $(cat "$DIR/names.txt") \
  > "$DIR/ground_truth.log" 2>&1; echo "ground truth rc=$?"
date -u +%FT%TZ >> "$DIR/env.txt"
cat "$DIR/env.txt" "$DIR/machine.txt"; tail -4 "$DIR/ground_truth.log"
python3 -c "
import json; d = json.load(open('$DIR/ground_truth.json'))
for w in d['workloads']: print(w['name'], w.get('ok'), w.get('median_step_ms'), w.get('max_memory_allocated'), (w.get('error') or '')[:200])"
tar czf "$OUTDIR/$TAG.tgz" -C /tmp "$TAG"
