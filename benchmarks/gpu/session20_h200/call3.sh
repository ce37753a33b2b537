#!/usr/bin/env bash
# Session 20 device call 3 (1 x H200), from the repository root: bash benchmarks/gpu/session20_h200/call3.sh OUT
# First, on the CPU machine, make the four held-out CNN workloads' traces as step 1 of
# benchmarks/gpu/heldout_cnn_layers_h200/COMMANDS.md says (cnn_traces/<workload>, timeline.json removed;
# untracked, so the call carries them). Then this call times their kernel signatures with `maya profile
# --trace`, which since 0dcfddd times convolutions behind a GPU sleep (the committed set was timed idle),
# twice (a second process, for the noise floor); then benchmarks/gpu/l2_warm_probe.py (ops with the L2
# flushed against right after a copy wrote their input); then convolution draws of seeds 90-95 until 450 s.
# Not yet run.
set -u
out=${1:?usage: call3.sh OUT}; DIR=/tmp/s20c
source benchmarks/gpu/device_call_start.sh
for run in 1 2; do
  for w in cifar_resnet18_bf16 convnext_tiny_bf16 resnet50_bf16_channels_last unet_ddpm_bf16; do
    timeout 130 python3 -m maya.estimator.profiler --trace cnn_traces/$w --out $DIR/cnn_run$run/$w > $DIR/cnn_run${run}_$w.log 2>&1
    echo "cnn run $run $w rc=$? at $SECONDS s" >> $DIR/jobs.txt
  done
done
timeout 120 python3 benchmarks/gpu/l2_warm_probe.py --out $DIR/l2_warm.json > $DIR/l2_warm.log 2>&1
echo "l2_warm_probe rc=$? at $SECONDS s" >> $DIR/jobs.txt
bash benchmarks/gpu/run_random_draws.sh $DIR/draws 0 $((450 - SECONDS)) $(for s in $(seq 90 95); do echo conv:$s; done) >> $DIR/jobs.txt
date -u +%FT%TZ >> $DIR/env.txt
tar czf "$out/s20c.tgz" -C /tmp s20c
