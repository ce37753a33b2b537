#!/usr/bin/env bash
# Session 17, device call 2 (1 x H200), from the repository root: bash benchmarks/gpu/session17_h200/call2.sh OUT
# The host microbenchmarks again (a second reading of the CNN layers' extras on this lease), then random
# draws: RNN seeds 97-116 (odd seeds TF32 off) until 300 s, attention 31-50 until 450 s, softmax and
# index 6-15 until 550 s.
set -u
out=${1:?usage: call2.sh OUT}; DIR=/tmp/s17b
source benchmarks/gpu/device_call_start.sh
timeout 60 python3 -m maya.estimator.profiler --out $DIR/host --families host > $DIR/host.log 2>&1
echo "host rc=$? at $SECONDS s" >> $DIR/jobs.txt
d=benchmarks/gpu/run_random_draws.sh
bash $d $DIR/draws 0 $((300 - SECONDS)) $(for s in $(seq 97 116); do echo rnn:$s$([ $((s % 2)) = 1 ] && echo :no-tf32); done) >> $DIR/jobs.txt
bash $d $DIR/draws 0 $((450 - SECONDS)) $(for s in $(seq 31 50); do echo sdpa:$s; done) >> $DIR/jobs.txt
bash $d $DIR/draws 0 $((550 - SECONDS)) $(for s in $(seq 6 15); do echo softmax:$s index:$s; done) >> $DIR/jobs.txt
date -u +%FT%TZ >> $DIR/env.txt
tar czf "$out/s17b.tgz" -C /tmp s17b
