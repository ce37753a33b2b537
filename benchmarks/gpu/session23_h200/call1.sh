#!/usr/bin/env bash
# Device call 1 (1 x H200), from the repository root: bash benchmarks/gpu/session23_h200/call1.sh OUT [END]
# Written in session 23, which was lent no GPU time; for the next session that is. First this lease's
# yardsticks, as session 22's call took them: the ground truth of MobileNetV2 (measured on two leases
# only) and ResNet-50 channels-last 160 px, and the lease's host costs (`maya profile --families host`,
# to join the groups of benchmarks/host_lease_means.py), and Chrome traces of one HF Llama and one
# Llama step (op_time_probe.py --chrome: the CPU time of every launch in situ; Maya predicts HF Llama
# host-bound, 52.4 ms of host time against 46.5 of GPU time, while the H200 ran it GPU-bound, busy 45.5
# of 49.0 ms: `python benchmarks/calibration_report.py hf_llama_bf16`). Then the norm grid's CNN-layout cases again,
# now with the channel layer norms (ConvNeXt/Swin-style layer norm over the channels of an NHWC view,
# permuted from NCHW or contiguous; added in dbd1fae, a minute after session 22's call had left:
# `maya profile --families norm --cnn-layouts`, 688 cases, in $DIR/norm_cnn); the elementwise grid,
# now with the factory and random ops (zeros, ones, full, randn, rand, randint, normal_, uniform_;
# `maya profile --families elementwise`, in $DIR/elementwise: ship only those ops' rows, then map the
# first six to the elementwise family in maya/estimator/families.py); then convolution draws
# behind the GPU sleep, the seeds session 22 left (116, 117, 127-140, 149-152) and 159 onwards, until
# END s (default 520). In /tmp/s23a, tarred to OUT/s23a.tgz. Later calls: `bash
# benchmarks/gpu/session20_h200/call1.sh OUT NAME FIRST LAST END` (draws only, seeds 165 onwards).
# Not yet run.
set -u
out=${1:?usage: call1.sh OUT [END]}; end=${2:-520}; DIR=/tmp/s23a
source benchmarks/gpu/device_call_start.sh
timeout 200 python3 benchmarks/validation/measure_ground_truth.py --only mobilenet_v2_bf16_channels_last resnet50_bf16_channels_last_160 --out $DIR/ground_truth_cnn.json > $DIR/ground_truth_cnn.log 2>&1
echo "ground truth mobilenet resnet50_cl_160 rc=$? at $SECONDS s" >> $DIR/jobs.txt
timeout 120 python3 -m maya.estimator.profiler --families host --out $DIR/host > $DIR/host.log 2>&1
echo "host profile rc=$? at $SECONDS s" >> $DIR/jobs.txt
timeout 120 python3 benchmarks/gpu/op_time_probe.py --out $DIR/op_times --chrome hf_llama_bf16 llama_150m_bf16 > $DIR/op_times.log 2>&1
echo "op_time_probe hf_llama llama_150m rc=$? at $SECONDS s" >> $DIR/jobs.txt
timeout 240 python3 -m maya.estimator.profiler --families norm --cnn-layouts --out $DIR/norm_cnn > $DIR/norm_cnn.log 2>&1
echo "norm cnn layouts rc=$? at $SECONDS s" >> $DIR/jobs.txt
timeout 240 python3 -m maya.estimator.profiler --families elementwise --out $DIR/elementwise > $DIR/elementwise.log 2>&1
echo "elementwise grid rc=$? at $SECONDS s" >> $DIR/jobs.txt
bash benchmarks/gpu/run_random_draws.sh $DIR/draws 0 $((end - SECONDS)) $(for s in 116 117 $(seq 127 140) $(seq 149 152) $(seq 159 164); do echo conv:$s; done) >> $DIR/jobs.txt
date -u +%FT%TZ >> $DIR/env.txt
tar czf "$out/s23a.tgz" -C /tmp s23a
