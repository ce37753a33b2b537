#!/usr/bin/env bash
# Session 47, call C (from the repository root on the device): on an H200 only, the host microbenchmarks,
# per-op GPU times with Chrome traces and input shapes (op_time_probe.py) of the three calibration
# workloads registered in session 38 (Qwen2-0.5B, the checkpointed ViT-L, the fp32 U-Net), and the host
# phase probe of the two host-bound ones (not with PHASES=0); written to /tmp/s47d and returned as $OUT/s47d.tgz.
set -u
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo NOT_H200; exit 0; }
DIR=/tmp/s47d
. benchmarks/gpu/device_call_start.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,uuid --format=csv > "$DIR/gpu.csv"
{ lscpu | grep -E '^(Model name|CPU\(s\)|CPU max MHz)'; nproc; } > "$DIR/machine.txt" 2>&1
timeout 60 python3 -m maya.estimator.profiler --out "$DIR/host" --families host > "$DIR/host.log" 2>&1; echo "host rc=$?"
timeout 180 python3 benchmarks/gpu/op_time_probe.py --chrome --shapes --out "$DIR/op_times" \
  hf_qwen2_0p5b_bf16 vit_large_bf16_ckpt unet_fp32_128px > "$DIR/op_times.log" 2>&1; echo "op_times rc=$?"
if [ "${PHASES:-1}" = 1 ]; then
  timeout 120 python3 benchmarks/gpu/host_phase_probe.py --out "$DIR/phases" hf_qwen2_0p5b_bf16 vit_large_bf16_ckpt \
    > "$DIR/phases.log" 2>&1; echo "phases rc=$?"
fi
date -u +%FT%TZ >> "$DIR/env.txt"
cat "$DIR/env.txt"; tail -4 "$DIR"/*.log | cut -c1-300
tar czf "$OUT/s47d.tgz" -C /tmp s47d
