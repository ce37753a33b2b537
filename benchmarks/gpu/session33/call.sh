#!/usr/bin/env bash
# Session 33 device call on one GPU (an H200, or an H100 when no H200 is lent): the caching allocator's
# answers to fixed allocation sequences under four PYTORCH_CUDA_ALLOC_CONF settings, the ground truth of
# twelve validation workloads with expandable_segments:True, and two workloads' allocator history. From
# the repository root:
#   bash benchmarks/gpu/session33/call.sh $OUT
set -u
DIR=${1:?OUT}/s33
. benchmarks/gpu/device_call_start.sh
timeout 150 python3 benchmarks/gpu/allocator_replay.py --out "$DIR" > "$DIR/allocator_replay.log" 2>&1
echo "allocator replay rc=$?"; cat "$DIR/allocator_replay.log"
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True timeout 300 python3 benchmarks/validation/measure_ground_truth.py \
  --only gpt2_124m_bf16 gpt2_124m_bf16_weights_seq2048 gpt2_760m_bf16 llama_150m_bf16 llama_1b_bf16 \
  llama_3b_bf16_ckpt resnet50_fp32 vit_base_bf16 hf_llama_bf16 hf_t5_bf16 torch_transformer_bf16 moe_top2_bf16 \
  --out "$DIR/ground_truth_expandable.json" 2>&1 | tee "$DIR/ground_truth_expandable.log"
timeout 100 python3 benchmarks/gpu/memory_history_probe.py --out "$DIR/memory_history" \
  --only resnet50_fp32 llama_3b_bf16_ckpt 2>&1 | tee "$DIR/memory_history.log"
date -u +%FT%TZ >> "$DIR/env.txt"
cat "$DIR/env.txt"
