#!/usr/bin/env bash
# Session 18, device call 1 (1 x H200), from the repository root: bash benchmarks/gpu/session18_h200/call1.sh OUT
# The copy grid with cat and stack of attention-shaped tensors and the index grid with in-place
# index_add_ (session 17's call4.sh, never run), then convolution draws 46-60 until 330 s and RNN
# draws 115-130 until 555 s.
set -u
out=${1:?usage: call1.sh OUT}; DIR=/tmp/s18a
source benchmarks/gpu/device_call_start.sh
timeout 100 python3 -m maya.estimator.profiler --out $DIR/grid --families copy,index > $DIR/grid.log 2>&1
echo "grid rc=$? at $SECONDS s" >> $DIR/jobs.txt
d=benchmarks/gpu/run_random_draws.sh
bash $d $DIR/draws 0 $((330 - SECONDS)) $(for s in $(seq 46 60); do echo conv:$s; done) >> $DIR/jobs.txt
bash $d $DIR/draws 0 $((555 - SECONDS)) $(for s in $(seq 115 130); do echo rnn:$s$([ $((s % 2)) = 1 ] && echo :no-tf32); done) >> $DIR/jobs.txt
date -u +%FT%TZ >> $DIR/env.txt
tar czf "$out/s18a.tgz" -C /tmp s18a
