#!/usr/bin/env bash
# Session 35's third lease, one GPU: the host microbenchmarks, then the whole validation suite's
# ground truth (measure_ground_truth.py writes its JSON after every workload, so a run stopped by the
# time limit keeps what it measured). Everything comes back as one tarball. From the repository root:
#   bash benchmarks/gpu/session35/call3.sh $OUT
set -u
OUTDIR=${1:?OUT}
DIR=/tmp/s35p
. benchmarks/gpu/device_call_start.sh
{ nproc; lscpu | grep 'Model name'; } > "$DIR/machine.txt"
timeout 60 python3 -m maya.estimator.profiler --out "$DIR/host" --families host > "$DIR/host.log" 2>&1; echo "host rc=$?"
timeout 480 python3 benchmarks/validation/measure_ground_truth.py --out "$DIR/ground_truth.json" > "$DIR/ground_truth.log" 2>&1
echo "ground truth rc=$?"
date -u +%FT%TZ >> "$DIR/env.txt"
cat "$DIR/env.txt"; tail -4 "$DIR/ground_truth.log"
tar czf "$OUTDIR/s35p.tgz" -C /tmp s35p
