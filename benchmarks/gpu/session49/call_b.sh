#!/usr/bin/env bash
# Session 49, call B (from the repository root on the device): on an H200 only, the seven workloads
# registered in session 38 on a second H200 lease with the host microbenchmarks first
# (session38/measure.sh, returned as $OUT/s49a.tgz), then on the same machine the host phase probe of
# Qwen2-0.5B and the checkpointed ViT-L (how long the host takes to issue each phase, unprofiled) and
# per-op GPU times with Chrome traces and input shapes (op_time_probe.py) of Qwen2 and the fp32 U-Net,
# written to /tmp/s49b and returned as $OUT/s49b.tgz.
# (Session 50: its closing `tail -3` over several logs became `tail -n 3`, which tail accepts there.)
set -u
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo NOT_H200; exit 0; }
HOST=1 bash benchmarks/gpu/session38/measure.sh "$OUT" s49a '[30:]' 200
DIR=/tmp/s49b
. benchmarks/gpu/device_call_start.sh
timeout 120 python3 benchmarks/gpu/host_phase_probe.py --out "$DIR/phases" hf_qwen2_0p5b_bf16 vit_large_bf16_ckpt \
  > "$DIR/phases.log" 2>&1; echo "phases rc=$?"
timeout 110 python3 benchmarks/gpu/op_time_probe.py --chrome --shapes --out "$DIR/op_times" \
  hf_qwen2_0p5b_bf16 unet_fp32_128px > "$DIR/op_times.log" 2>&1; echo "op_times rc=$?"
date -u +%FT%TZ >> "$DIR/env.txt"
cat "$DIR/env.txt"; tail -n 3 "$DIR"/*.log | cut -c1-300
tar czf "$OUT/s49b.tgz" -C /tmp s49b
