#!/usr/bin/env bash
# Session 20 device call 4 (1 x H200), from the repository root: bash benchmarks/gpu/session20_h200/call4.sh OUT
# With the session's last device minutes: the new calibration workload mobilenet_v2_bf16_channels_last's
# ground truth and per-op GPU times (Chrome trace and input shapes), written straight to OUT so that
# whatever finishes comes back.
set -u
out=${1:?usage: call4.sh OUT}; DIR=$out
source benchmarks/gpu/device_call_start.sh
timeout 75 python3 benchmarks/validation/measure_ground_truth.py --only mobilenet_v2_bf16_channels_last --out $out/ground_truth_mobilenet.json > $out/ground_truth_mobilenet.log 2>&1
echo "ground truth mobilenet rc=$? at $SECONDS s" >> $out/jobs.txt
timeout 75 python3 benchmarks/gpu/op_time_probe.py --chrome --shapes --out $out/op_times mobilenet_v2_bf16_channels_last > $out/op_times.log 2>&1
echo "op_time_probe mobilenet rc=$? at $SECONDS s" >> $out/jobs.txt
date -u +%FT%TZ >> $out/env.txt
