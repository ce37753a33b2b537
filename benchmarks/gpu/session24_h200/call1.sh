#!/usr/bin/env bash
# Device call 1 (1 x H200), from the repository root: bash benchmarks/gpu/session24_h200/call1.sh OUT [END]
# Written in session 24 after its device time was spent; for the next session that has some. First
# where HF Llama's host time goes in a real step (`host_phase_probe.py`, phases and per-op dispatch
# entries, with HF BERT and Llama 150M beside it): Maya predicts HF Llama host-bound (host 52.4 ms
# against 46.5 ms of GPU time) while the H200 ran it GPU-bound (busy 45.5 of 49.0 ms), and its forward
# (552 launches, fewer than the launch queue holds) is issued without blocking, so its issue time is
# the host's own. Then cuDNN RNN draws behind the GPU sleep (seeds 100-111, odd seeds with TF32 off, as
# before; RNNs are 43.8% of the per-op held-out set's time at 8.0% time-weighted error), then
# convolution draws behind the sleep (the seeds session 23 left: 130-140, 149-152, 159-164, 174-176,
# 187 onwards), until END s (default 520). In /tmp/s24a, tarred to OUT/s24a.tgz. Later calls:
# `bash benchmarks/gpu/session20_h200/call1.sh OUT NAME FIRST LAST END` (conv draws only, seeds 189
# onwards). Not yet run.
set -u
out=${1:?usage: call1.sh OUT [END]}; end=${2:-520}; DIR=/tmp/s24a
source benchmarks/gpu/device_call_start.sh
timeout 150 python3 benchmarks/gpu/host_phase_probe.py --out $DIR/phases hf_llama_bf16 hf_bert_bf16 llama_150m_bf16 > $DIR/phases.log 2>&1
echo "host_phase_probe hf_llama hf_bert llama_150m rc=$? at $SECONDS s" >> $DIR/jobs.txt
bash benchmarks/gpu/run_random_draws.sh $DIR/draws 0 $((end - SECONDS)) \
  $(for s in $(seq 100 111); do if [ $((s % 2)) = 1 ]; then echo rnn:$s:no-tf32; else echo rnn:$s; fi; done) \
  $(for s in $(seq 130 140) 149 150 151 152 $(seq 159 164) 174 175 176 $(seq 187 200); do echo conv:$s; done) >> $DIR/jobs.txt
date -u +%FT%TZ >> $DIR/env.txt
tar czf "$out/s24a.tgz" -C /tmp s24a
