#!/usr/bin/env bash
# Session 34 device call on one GPU: the host cost of ops on shapes the process has not run before
# (new_shape_host_probe.py), the MoE workload with data-dependent and with fixed expert sizes
# (moe_fixed_shapes_probe.py), and the allocator replay with device
# addresses. From the repository root:
#   bash benchmarks/gpu/session34/call.sh $OUT      (SKIP_REPLAY=1: without the allocator replay)
set -u
DIR=${1:?OUT}/s34
. benchmarks/gpu/device_call_start.sh
timeout 150 python3 benchmarks/gpu/new_shape_host_probe.py --out "$DIR" 2>&1 | tee "$DIR/new_shape_host.log"
timeout 150 python3 benchmarks/gpu/moe_fixed_shapes_probe.py --out "$DIR" --repeats 1 2>&1 | tee "$DIR/moe_fixed_shapes.log"
if [ -z "${SKIP_REPLAY:-}" ]; then
  timeout 150 python3 benchmarks/gpu/allocator_replay.py --out "$DIR" > "$DIR/allocator_replay.log" 2>&1
  echo "allocator replay rc=$?"; tail -5 "$DIR/allocator_replay.log"
fi
date -u +%FT%TZ >> "$DIR/env.txt"
cat "$DIR/env.txt"
