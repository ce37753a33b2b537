#!/usr/bin/env bash
# Session 21 device call 1 (1 x H200), from the repository root: bash benchmarks/gpu/session21_h200/call1.sh OUT [END]
# The copy and reduction grids' CNN-layout cases (`maya profile --cnn-layouts`: 4-D tensors in NCHW and
# channels-last, which the grids lacked), the new calibration workload mobilenet_v2_bf16_channels_last's
# ground truth and per-op times, then convolution draws behind the GPU sleep from seed 96 until END s
# (default 520). In /tmp/s21a, tarred to OUT/s21a.tgz. Ran 2026-12-03 (COMMANDS.md beside this file).
set -u
out=${1:?usage: call1.sh OUT [END]}; end=${2:-520}; DIR=/tmp/s21a
source benchmarks/gpu/device_call_start.sh
timeout 240 python3 -m maya.estimator.profiler --families copy,reduction --cnn-layouts --out $DIR/cnn_layouts > $DIR/cnn_layouts.log 2>&1
echo "cnn_layouts rc=$? at $SECONDS s" >> $DIR/jobs.txt
# The new calibration workload (MobileNetV2, session 20): its ground truth, and its per-op GPU times (with
# the Chrome trace and input shapes) for benchmarks/calibrate.py.
timeout 150 python3 benchmarks/validation/measure_ground_truth.py --only mobilenet_v2_bf16_channels_last --out $DIR/ground_truth_mobilenet.json > $DIR/ground_truth_mobilenet.log 2>&1
echo "ground truth mobilenet rc=$? at $SECONDS s" >> $DIR/jobs.txt
timeout 150 python3 benchmarks/gpu/op_time_probe.py --chrome --shapes --out $DIR/op_times mobilenet_v2_bf16_channels_last > $DIR/op_times.log 2>&1
echo "op_time_probe mobilenet rc=$? at $SECONDS s" >> $DIR/jobs.txt
bash benchmarks/gpu/run_random_draws.sh $DIR/draws 0 $((end - SECONDS)) $(for s in $(seq 96 105); do echo conv:$s; done) >> $DIR/jobs.txt
date -u +%FT%TZ >> $DIR/env.txt
tar czf "$out/s21a.tgz" -C /tmp s21a
