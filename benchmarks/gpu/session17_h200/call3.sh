#!/usr/bin/env bash
# Session 17, device call 3 (1 x H200), from the repository root: bash benchmarks/gpu/session17_h200/call3.sh OUT
# The host microbenchmarks with the CNN layers' backward extras measured beyond a one-op backward
# (commit 680d121), the foreach grid with aliased list arguments and a 3B-parameter model's lists
# (commit 1f89a21), foreach draws 6-30 until 220 s, RNN draws 105-116 until 440 s, attention 41-50 until 555 s.
set -u
out=${1:?usage: call3.sh OUT}; DIR=/tmp/s17c
source benchmarks/gpu/device_call_start.sh
timeout 60 python3 -m maya.estimator.profiler --out $DIR/host --families host > $DIR/host.log 2>&1
echo "host rc=$? at $SECONDS s" >> $DIR/jobs.txt
timeout 120 python3 -m maya.estimator.profiler --out $DIR/grid --families foreach > $DIR/grid.log 2>&1
echo "grid rc=$? at $SECONDS s" >> $DIR/jobs.txt
d=benchmarks/gpu/run_random_draws.sh
bash $d $DIR/draws 0 $((220 - SECONDS)) $(for s in $(seq 6 30); do echo foreach:$s; done) >> $DIR/jobs.txt
bash $d $DIR/draws 0 $((440 - SECONDS)) $(for s in $(seq 105 116); do echo rnn:$s$([ $((s % 2)) = 1 ] && echo :no-tf32); done) >> $DIR/jobs.txt
bash $d $DIR/draws 0 $((555 - SECONDS)) $(for s in $(seq 41 50); do echo sdpa:$s; done) >> $DIR/jobs.txt
date -u +%FT%TZ >> $DIR/env.txt
tar czf "$out/s17c.tgz" -C /tmp s17c
