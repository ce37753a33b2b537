#!/usr/bin/env bash
# Device call 2 (1 x H200), from the repository root: bash benchmarks/gpu/session29_h200/call2.sh OUT [END]
# Session 29. The ground truth of the held-out workload added this session (gpt2_124m_fp16_scaler:
# float16 autocast with GradScaler) beside gpt2_124m_bf16 on the same lease; the generation loops'
# token ops added to the elementwise grid in session 29 (floor_divide, isin: `--ops`); then RNN draws behind
# the GPU sleep (seeds 100-117, every other one with TF32 off, as sessions 15-16 drew them; 97-99 were never run) until
# RNN_END s (default 250); then convolution draws (seeds 213 onwards) until END s (default 540).
# In /tmp/s29b, tarred to OUT/s29b.tgz. Run `bash benchmarks/gpu/device_tree.sh out` before the call
# (the device tool's 64 MiB) and `bash benchmarks/gpu/device_tree.sh back` right after it.
set -u
out=${1:?usage: call2.sh OUT [END] [RNN_END]}; end=${2:-540}; rnn_end=${3:-250}; DIR=/tmp/s29b
source benchmarks/gpu/device_call_start.sh
timeout 150 python3 benchmarks/validation/measure_ground_truth.py --only gpt2_124m_fp16_scaler gpt2_124m_bf16 \
  --out $DIR/ground_truth.json > $DIR/ground_truth.log 2>&1
echo "ground truth rc=$? at $SECONDS s" >> $DIR/jobs.txt
timeout 60 python3 -m maya.estimator.profiler --families elementwise --out $DIR/tokens \
  --ops aten::floor_divide,aten::isin.Tensor_Tensor > $DIR/tokens.log 2>&1
echo "token ops profile rc=$? at $SECONDS s" >> $DIR/jobs.txt
bash benchmarks/gpu/run_random_draws.sh $DIR/draws 0 $((rnn_end - SECONDS)) \
  $(for s in $(seq 100 2 116); do echo rnn:$s rnn:$((s + 1)):no-tf32; done) >> $DIR/jobs.txt
bash benchmarks/gpu/run_random_draws.sh $DIR/draws 0 $((end - SECONDS)) $(for s in $(seq 213 240); do echo conv:$s; done) >> $DIR/jobs.txt
date -u +%FT%TZ >> $DIR/env.txt
tar czf "$out/s29b.tgz" -C /tmp s29b
