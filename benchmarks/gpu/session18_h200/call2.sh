#!/usr/bin/env bash
# Session 18, device call 2 (1 x H200), from the repository root: bash benchmarks/gpu/session18_h200/call2.sh OUT
# host_phase_probe.py with the CUDA-event phase marks (commit b17d743) on four calibration workloads
# (until 200 s), then RNN draws 122-140 until 380 s and convolution draws 52-60 until 470 s.
set -u
out=${1:?usage: call2.sh OUT}; DIR=/tmp/s18b
source benchmarks/gpu/device_call_start.sh
timeout 200 python3 benchmarks/gpu/host_phase_probe.py --out $DIR/phases hf_bert_bf16 gpt2_124m_bf16 hf_llama_bf16 moe_top2_bf16 > $DIR/phases.log 2>&1
echo "phases rc=$? at $SECONDS s" >> $DIR/jobs.txt
d=benchmarks/gpu/run_random_draws.sh
bash $d $DIR/draws 0 $((380 - SECONDS)) $(for s in $(seq 122 140); do echo rnn:$s$([ $((s % 2)) = 1 ] && echo :no-tf32); done) >> $DIR/jobs.txt
bash $d $DIR/draws 0 $((470 - SECONDS)) $(for s in $(seq 52 60); do echo conv:$s; done) >> $DIR/jobs.txt
date -u +%FT%TZ >> $DIR/env.txt
tar czf "$out/s18b.tgz" -C /tmp s18b
