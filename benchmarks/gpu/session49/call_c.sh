#!/usr/bin/env bash
# Session 49, call C (call B cut to fit less device time): on an H200 only, the seven workloads
# registered in session 38 with the host microbenchmarks first (session38/measure.sh, $OUT/s49a.tgz),
# then the host phase probe of Qwen2-0.5B alone, written to /tmp/s49c and returned as $OUT/s49c.tgz.
set -u
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo NOT_H200; exit 0; }
HOST=1 bash benchmarks/gpu/session38/measure.sh "$OUT" s49a '[30:]' 200
DIR=/tmp/s49c
. benchmarks/gpu/device_call_start.sh
timeout 80 python3 benchmarks/gpu/host_phase_probe.py --out "$DIR/phases" hf_qwen2_0p5b_bf16 \
  > "$DIR/phases.log" 2>&1; echo "phases rc=$?"
date -u +%FT%TZ >> "$DIR/env.txt"
cat "$DIR/env.txt"; tail -3 "$DIR/phases.log" | cut -c1-300
tar czf "$OUT/s49c.tgz" -C /tmp s49c
