#!/usr/bin/env bash
# Session 35 device call on one GPU: the backward host figure by its old and its current method
# (backward_host_probe.py), the host microbenchmarks with the current method, the host cost of
# convolution and attention backward on new shapes (new_shape_host_probe.py --backward), and the
# per-phase host time of the host-bound calibration workloads (host_phase_probe.py). From the
# repository root:
#   bash benchmarks/gpu/session35/call.sh $OUT
set -u
DIR=${1:?OUT}/s35
. benchmarks/gpu/device_call_start.sh
timeout 120 python3 benchmarks/gpu/backward_host_probe.py --out "$DIR" --repeats 5 2>&1 | tee "$DIR/backward_host.log"
timeout 120 python3 -m maya.estimator.profiler --out "$DIR/host" --families host > "$DIR/host.log" 2>&1
echo "host rc=$?"; tail -2 "$DIR/host.log"
timeout 150 python3 benchmarks/gpu/new_shape_host_probe.py --out "$DIR" --trials 2 --backward 2>&1 | tee "$DIR/new_shape_host_backward.log"
timeout 200 python3 benchmarks/gpu/host_phase_probe.py --out "$DIR/host_phase" mlp_tiny_adamw dlrm_fp32 moe_top2_bf16 > "$DIR/host_phase.log" 2>&1
echo "host_phase rc=$?"; tail -3 "$DIR/host_phase.log"
timeout 60 python3 benchmarks/gpu/backward_host_probe.py --out "$DIR/after" --repeats 3 2>&1 | tail -1
date -u +%FT%TZ >> "$DIR/env.txt"
cat "$DIR/env.txt"
