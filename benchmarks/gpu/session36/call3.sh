#!/usr/bin/env bash
# Session 36: the copy grid's resampling cases (upsample nearest / bilinear 2x and adaptive average
# pooling to 7x7, forward and backward; `profile_grid._cnn_resample_cases`), which no profile had
# timed, twice in two processes (the second as a repeat). One tarball back. From the repository root:
#   bash benchmarks/gpu/session36/call3.sh $OUT
set -u
OUTDIR=${1:?OUT}
DIR=/tmp/s36r
. benchmarks/gpu/device_call_start.sh
OPS=aten::upsample_nearest2d,aten::upsample_nearest2d_backward,aten::upsample_bilinear2d,aten::upsample_bilinear2d_backward,aten::_adaptive_avg_pool2d,aten::_adaptive_avg_pool2d_backward
for run in 1 2; do
  timeout 250 python3 -m maya.estimator.profiler --out "$DIR/run$run" --families copy --ops "$OPS" > "$DIR/run$run.log" 2>&1
  echo "run$run rc=$?"
done
date -u +%FT%TZ >> "$DIR/env.txt"
cat "$DIR/env.txt"; tail -2 "$DIR/run1.log"
tar czf "$OUTDIR/s36r.tgz" -C /tmp s36r
