#!/usr/bin/env bash
# Session 22 device call 1 (1 x H200), from the repository root: bash benchmarks/gpu/session22_h200/call1.sh OUT [END]
# MobileNetV2 (the calibration CNN measured once, in session 21, and partly host-bound there: GPU busy
# 18.1 ms of a 25.1 ms step; Maya predicted 19.97 ms) on a second lease: its ground truth again, with
# ResNet-50 channels-last 160 px (as host-bound, measured 16.9-27.6 ms over seven leases) as this
# lease's yardstick, the lease's host costs (`maya profile --families host`), and MobileNetV2's phase
# spans (host_phase_probe.py, read by benchmarks/phase_spans.py); RoPE's rotate_half cats
# (benchmarks/gpu/rope_cat_shapes.py: first, on the CPU machine, from the repository root,
# `maya emulate --trace-dir rope_trace benchmarks/gpu/rope_cat_shapes.py && rm rope_trace/timeline.json`;
# untracked, so the call carries it) timed by `maya profile --trace`; the norm grid's CNN-layout cases (batch and
# group norms and channel layer norms, `maya profile --families norm --cnn-layouts`, in $DIR/norm_cnn); then convolution draws behind the GPU sleep,
# the seeds session 21 left (102-105, 115-117) and 128 onwards, until END s (default 520). In /tmp/s22a,
# tarred to OUT/s22a.tgz. Not yet run.
set -u
out=${1:?usage: call1.sh OUT [END]}; end=${2:-520}; DIR=/tmp/s22a
source benchmarks/gpu/device_call_start.sh
timeout 200 python3 benchmarks/validation/measure_ground_truth.py --only mobilenet_v2_bf16_channels_last resnet50_bf16_channels_last_160 --out $DIR/ground_truth_cnn.json > $DIR/ground_truth_cnn.log 2>&1
echo "ground truth mobilenet resnet50_cl_160 rc=$? at $SECONDS s" >> $DIR/jobs.txt
timeout 120 python3 -m maya.estimator.profiler --families host --out $DIR/host > $DIR/host.log 2>&1
echo "host profile rc=$? at $SECONDS s" >> $DIR/jobs.txt
timeout 120 python3 benchmarks/gpu/host_phase_probe.py --out $DIR/phases mobilenet_v2_bf16_channels_last > $DIR/phases.log 2>&1
echo "host_phase_probe mobilenet rc=$? at $SECONDS s" >> $DIR/jobs.txt
timeout 90 python3 -m maya.estimator.profiler --trace rope_trace --out $DIR/rope > $DIR/rope.log 2>&1
echo "rope cats rc=$? at $SECONDS s" >> $DIR/jobs.txt
timeout 240 python3 -m maya.estimator.profiler --families norm --cnn-layouts --out $DIR/norm_cnn > $DIR/norm_cnn.log 2>&1
echo "norm cnn layouts rc=$? at $SECONDS s" >> $DIR/jobs.txt
bash benchmarks/gpu/run_random_draws.sh $DIR/draws 0 $((end - SECONDS)) $(for s in 102 103 104 105 115 116 117 $(seq 128 140); do echo conv:$s; done) >> $DIR/jobs.txt
date -u +%FT%TZ >> $DIR/env.txt
tar czf "$out/s22a.tgz" -C /tmp s22a
