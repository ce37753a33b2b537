#!/usr/bin/env bash
# Session 17, device call 4 (1 x H200), from the repository root: bash benchmarks/gpu/session17_h200/call4.sh OUT
# The copy grid with cat and stack of attention-shaped tensors (commit e02d79e) and the index grid with
# in-place index_add_ (the commit after it); not yet run.
set -u
out=${1:?usage: call4.sh OUT}; DIR=/tmp/s17d
source benchmarks/gpu/device_call_start.sh
timeout 100 python3 -m maya.estimator.profiler --out $DIR/grid --families copy,index > $DIR/grid.log 2>&1
echo "grid rc=$? at $SECONDS s" >> $DIR/jobs.txt
date -u +%FT%TZ >> $DIR/env.txt
tar czf "$out/s17d.tgz" -C /tmp s17d
