#!/usr/bin/env bash
# Session 17, device call 1 (1 x H200), from the repository root: bash benchmarks/gpu/session17_h200/call1.sh OUT
# The host microbenchmarks (now with the CNN layers' extras), the copy and reduction grids (pooling and
# LM bias-gradient sums joined them), per-op-and-shape GPU times of the 12 calibration workloads not yet
# probed, then copy draws (each seed with its 40 pooling draws) until 540 s.
set -u
out=${1:?usage: call1.sh OUT}; DIR=/tmp/s17a
source benchmarks/gpu/device_call_start.sh
timeout 120 python3 -m maya.estimator.profiler --out $DIR/host --families host > $DIR/host.log 2>&1
echo "host rc=$? at $SECONDS s" >> $DIR/jobs.txt
timeout 150 python3 -m maya.estimator.profiler --out $DIR/grid --families copy,reduction > $DIR/grid.log 2>&1
echo "grid rc=$? at $SECONDS s" >> $DIR/jobs.txt
timeout 200 python3 benchmarks/gpu/op_time_probe.py --shapes --out $DIR/op_shapes dlrm_fp32 gpt2_124m_bf16_weights_seq2048 \
  gpt2_124m_ddp1 gpt2_350m_ckpt hf_llama_bf16 lstm_lm_fp32 mlp_tiny_adamw moe_top2_bf16 resnet50_fp32 \
  torch_transformer_bf16 vit_base_bf16 llama_3b_bf16_ckpt > $DIR/op_shapes.log 2>&1
echo "op_time_probe rc=$? at $SECONDS s" >> $DIR/jobs.txt
bash benchmarks/gpu/run_random_draws.sh $DIR/draws 0 $((540 - SECONDS)) $(for s in $(seq 6 30); do echo copy:$s; done) >> $DIR/jobs.txt
date -u +%FT%TZ >> $DIR/env.txt
tar czf "$out/s17a.tgz" -C /tmp s17a
