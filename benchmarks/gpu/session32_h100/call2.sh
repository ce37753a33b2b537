#!/usr/bin/env bash
# Session 32, third device call on one NVIDIA H100 (kind nvidia-h100-x1): per-op timings for the H200 -> H100
# transfer, from the repository root: bash benchmarks/gpu/session32_h100/call2.sh OUT [END]
# 1. held/: `--random-only --seed 1`, every family: the held-out shapes benchmarks/estimator_accuracy.py
#    scores on the H200 (convolutions, RNN and foreach ops behind a GPU sleep, as the profiler times them).
# 2. pairs/: `--random-only --seed 0` of the families whose H200 rows of seed 0 are in the shipped profiles
#    and were timed the same way (not convolutions and RNN: their shipped seed-0 rows were timed idle),
#    then convolution seeds 217 and 218 (timed behind the sleep on an H200 in session 31,
#    benchmarks/gpu/session31_h200/conv_draws_s31.parquet): shapes with both GPUs' times.
# Stops at END s (default 540). Tarred to OUT/s32c.tgz.
set -u
out=${1:?usage: call2.sh OUT [END]}; end=${2:-540}
DIR=/tmp/s32c
source benchmarks/gpu/device_call_start.sh
timeout $((end - SECONDS)) python3 -m maya.estimator.profiler --out $DIR/held --random-only --seed 1 \
  --families gemm,conv,sdpa,norm,softmax,embedding,elementwise,reduction,copy,foreach,index,rnn > $DIR/held.log 2>&1
echo "held rc=$? at ${SECONDS}s"
timeout $((end - SECONDS)) python3 -m maya.estimator.profiler --out $DIR/pairs --random-only --seed 0 \
  --families gemm,sdpa,norm,softmax,embedding,elementwise,reduction,copy,foreach,index > $DIR/pairs.log 2>&1
echo "pairs rc=$? at ${SECONDS}s"
bash benchmarks/gpu/run_random_draws.sh $DIR/conv_pairs 0 $((end - SECONDS)) conv:217 conv:218 >> $DIR/jobs.txt
cat $DIR/jobs.txt
date -u +%FT%TZ >> $DIR/env.txt
tar czf "$out/s32c.tgz" -C /tmp s32c
ls -la $out
