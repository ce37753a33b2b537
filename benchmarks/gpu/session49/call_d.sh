#!/usr/bin/env bash
# Session 49, call D: on an H200, call C (the seven on a second H200 lease, then Qwen2's host phase
# probe). On any other GPU (an H100 came where H200s did not), what a host measurement there still
# tells: that machine's host microbenchmarks and the host phase probe of Qwen2-0.5B and the
# checkpointed ViT-L (how long its host takes to issue each phase, unprofiled; host time is the CPU's,
# so `benchmarks/host_phase_factors.py --lease` compares it with Maya's host model at that machine's
# figures), written to /tmp/s49d and returned as $OUT/s49d.tgz.
# (Session 50: its closing `tail -3` over several logs became `tail -n 3`, which tail accepts there.)
set -u
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  exec bash benchmarks/gpu/session49/call_c.sh
fi
DIR=/tmp/s49d
. benchmarks/gpu/device_call_start.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,uuid --format=csv > "$DIR/gpu.csv"
{ lscpu | grep -E '^(Model name|CPU\(s\)|CPU max MHz)'; nproc; } > "$DIR/machine.txt" 2>&1
timeout 60 python3 -m maya.estimator.profiler --out "$DIR/host" --families host > "$DIR/host.log" 2>&1; echo "host rc=$?"
timeout 150 python3 benchmarks/gpu/host_phase_probe.py --out "$DIR/host_phase" hf_qwen2_0p5b_bf16 vit_large_bf16_ckpt \
  > "$DIR/phases.log" 2>&1; echo "phases rc=$?"
date -u +%FT%TZ >> "$DIR/env.txt"
cat "$DIR/env.txt" "$DIR/machine.txt"; tail -n 3 "$DIR"/*.log | cut -c1-300
tar czf "$OUT/s49d.tgz" -C /tmp s49d
